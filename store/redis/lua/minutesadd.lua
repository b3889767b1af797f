-- minutesadd: ARGV[4] a JSON array of store.Stats rows, each [minute µs as a string, node, queue, kind,
-- completed, failed, discarded, cancelled, [latency buckets], [duration buckets]]. A minute's
-- rows are the hash min:<minute>, one field per node, queue and kind ([node, queue, kind] as
-- JSON), its value [completed, failed, discarded, cancelled, [latency], [duration]] (cjson
-- writes an empty array as {}); the zset
-- min holds the minutes, scored by their time. A row already there is added to.
checkMeta()
local function add(a, b)
  for i = 1, #b do a[i] = (a[i] or 0) + b[i] end
  return a
end
for _, r in ipairs(cjson.decode(ARGV[4])) do
  local key = P .. 'min:' .. r[1]
  local field = cjson.encode({r[2], r[3], r[4]})
  local v = {r[5], r[6], r[7], r[8], r[9], r[10]}
  local old = rcall('HGET', key, field)
  if old then
    local o = cjson.decode(old)
    for i = 1, 4 do v[i] = v[i] + o[i] end
    v[5] = add(o[5], v[5])
    v[6] = add(o[6], v[6])
  end
  rcall('HSET', key, field, cjson.encode(v))
  rcall('ZADD', P .. 'min', r[1], r[1])
end
return 'OK'
