#!ro
-- stats: per queue that has jobs or is paused: name, paused, the count of every state (in
-- STATES order), and the oldest available job's run_at ('' when none).
checkMeta()
local out = {}
for _, q in ipairs(redis.call('SUNION', P .. 'queues', P .. 'paused')) do
  local r = {q, redis.call('SISMEMBER', P .. 'paused', q)}
  for _, s in ipairs(STATES) do r[#r + 1] = redis.call('ZCARD', P .. 'sq:' .. s .. ':' .. q) end
  local o = redis.call('ZRANGE', P .. 'avt:' .. q, 0, 0, 'WITHSCORES')
  r[#r + 1] = o[2] or ''
  out[#out + 1] = r
end
return out
