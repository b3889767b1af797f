#!ro
-- list: ARGV[4] number of states, the states, then queue, kind, after id ('' for none), desc
-- ('1'), limit, workflow, tag, schedule, args substring, args path (dot-separated keys), args
-- value (JSON), created after and created before (microseconds, '' for none), owner. Merges the
-- id-ordered (state, queue) sets, or reads the workflow's id-ordered set of steps; with a filter
-- those do not serve, it examines at most 2000 jobs and returns a cursor to go on from ('' when
-- done).
checkMeta()
local nst = tonumber(ARGV[4])
local states = {}
for i = 1, nst do states[i] = ARGV[4 + i] end
if nst == 0 then states = STATES end
local b = 5 + nst
local queue, kind, cursor, desc, limit = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3] == '1', tonumber(ARGV[b + 4])
local workflow = ARGV[b + 5]
local tag, schedule, contains, path, value = ARGV[b + 6], ARGV[b + 7], ARGV[b + 8], ARGV[b + 9], ARGV[b + 10]
local cafter, cbefore = tonumber(ARGV[b + 11]), tonumber(ARGV[b + 12])
local owner = ARGV[b + 13]
local segs, want
if path ~= '' then
  segs = {}
  for seg in string.gmatch(path, '[^.]+') do segs[#segs + 1] = seg end
  want = cjson.decode('[' .. value .. ']')[1]
end
local streams = {}
local wanted -- with a workflow: the states asked for, checked per step
if workflow ~= '' then
  streams[1] = P .. 'wf:' .. workflow
  if nst > 0 then
    wanted = {}
    for _, s in ipairs(states) do wanted[s] = true end
  end
else
  local queues = {queue}
  if queue == '' then queues = rcall('SMEMBERS', P .. 'queues') end
  for _, q in ipairs(queues) do
    for _, s in ipairs(states) do
      local key = sqKey(s, q)
      if rcall('EXISTS', key) == 1 then streams[#streams + 1] = key end
    end
  end
end
local fields = tag ~= '' or schedule ~= '' or contains ~= '' or segs or cafter or cbefore or owner ~= ''
local filtered = kind ~= '' or (workflow ~= '' and (wanted or queue ~= '')) or fields
-- hasTag reports whether the JSON array of tags t holds tag.
local function hasTag(t)
  if not t then return false end
  local xs = cjson.decode(t)
  if type(xs) ~= 'table' then return false end
  for _, x in ipairs(xs) do
    if x == tag then return true end
  end
  return false
end
-- atPath reports whether the args a hold want at segs, object keys all the way.
local function atPath(a)
  local ok, v = pcall(cjson.decode, a or '')
  if not ok then return false end
  for _, seg in ipairs(segs) do
    if type(v) ~= 'table' or v[1] ~= nil then return false end
    v = v[seg]
  end
  return type(v) == type(want) and v == want
end
-- matchesFields applies the filters on a job's tags, schedule, args, creation time and owner.
local function matchesFields(v)
  if owner ~= '' and v[8] ~= owner then return false end
  if tag ~= '' and not hasTag(v[4]) then return false end
  if schedule ~= '' and v[5] ~= schedule then return false end
  if contains ~= '' and not string.find(v[6] or '', contains, 1, true) then return false end
  if segs and not atPath(v[6]) then return false end
  local c = tonumber(v[7]) or 0
  if cafter and c < cafter then return false end
  if cbefore and c >= cbefore then return false end
  return true
end
-- matches applies the filters the streams do not.
local function matches(id)
  if not filtered then return true end
  local v = rcall('HMGET', jkey(id), 'k', 's', 'q', 'T', 'sc', 'A', 'c', 'o')
  if kind ~= '' and v[1] ~= kind then return false end
  if fields and not matchesFields(v) then return false end
  if workflow == '' then return true end
  return (not wanted or wanted[v[2]]) and (queue == '' or v[3] == queue)
end
local out, examined = {}, 0
while #out < limit do
  local chunk = limit - #out
  if filtered then chunk = math.max(chunk, 100) end
  local cands = {}
  for _, key in ipairs(streams) do
    local r
    if desc then
      local from = '+inf'
      if cursor ~= '' then from = '(' .. cursor end
      r = rcall('ZRANGE', key, from, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, chunk)
    else
      local from = '-inf'
      if cursor ~= '' then from = '(' .. cursor end
      r = rcall('ZRANGE', key, from, '+inf', 'BYSCORE', 'LIMIT', 0, chunk)
    end
    for _, id in ipairs(r) do cands[#cands + 1] = tonumber(id) end
  end
  if #cands == 0 then break end
  if desc then table.sort(cands, function(x, y) return x > y end) else table.sort(cands) end
  for i = 1, math.min(chunk, #cands) do
    local id = fmt(cands[i])
    cursor = id
    examined = examined + 1
    if matches(id) then
      out[#out + 1] = row(id)
      if #out >= limit then return {out, ''} end
    end
  end
  if examined >= 2000 then return {out, cursor} end
end
return {out, ''}
