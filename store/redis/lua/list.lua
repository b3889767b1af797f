#!ro
-- list: ARGV[4] number of states, the states, then queue, kind, after id ('' for none), desc
-- ('1'), limit. Merges the id-ordered (state, queue) sets; with a kind filter it examines at
-- most 2000 jobs and returns a cursor to go on from ('' when done).
checkMeta()
local nst = tonumber(ARGV[4])
local states = {}
for i = 1, nst do states[i] = ARGV[4 + i] end
if nst == 0 then states = STATES end
local b = 5 + nst
local queue, kind, cursor, desc, limit = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3] == '1', tonumber(ARGV[b + 4])
local queues = {queue}
if queue == '' then queues = redis.call('SMEMBERS', P .. 'queues') end
local streams = {}
for _, q in ipairs(queues) do
  for _, s in ipairs(states) do
    local key = P .. 'sq:' .. s .. ':' .. q
    if redis.call('EXISTS', key) == 1 then streams[#streams + 1] = key end
  end
end
local out, examined = {}, 0
while #out < limit do
  local chunk = limit - #out
  if kind ~= '' then chunk = math.max(chunk, 100) end
  local cands = {}
  for _, key in ipairs(streams) do
    local r
    if desc then
      local from = '+inf'
      if cursor ~= '' then from = '(' .. cursor end
      r = redis.call('ZRANGE', key, from, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, chunk)
    else
      local from = '-inf'
      if cursor ~= '' then from = '(' .. cursor end
      r = redis.call('ZRANGE', key, from, '+inf', 'BYSCORE', 'LIMIT', 0, chunk)
    end
    for _, id in ipairs(r) do cands[#cands + 1] = tonumber(id) end
  end
  if #cands == 0 then break end
  if desc then table.sort(cands, function(x, y) return x > y end) else table.sort(cands) end
  for i = 1, math.min(chunk, #cands) do
    local id = fmt(cands[i])
    cursor = id
    examined = examined + 1
    if kind == '' or redis.call('HGET', jkey(id), 'k') == kind then
      out[#out + 1] = row(id)
      if #out >= limit then return {out, ''} end
    end
  end
  if examined >= 2000 then return {out, cursor} end
end
return {out, ''}
