#!oom
-- prune: ARGV[4] before µs, [5] limit, [6] number of states, then the states. Deletes up to
-- limit final jobs finalized before `before`, oldest first across the states (then by id), and
-- forgets queues left without jobs.
checkMeta()
local before, limit = ARGV[4], tonumber(ARGV[5])
local cands, seen = {}, {}
for i = 1, tonumber(ARGV[6]) do
  local s = ARGV[6 + i]
  if FINAL[s] and not seen[s] then
    seen[s] = true
    local r = rcall('ZRANGE', P .. 'fin:' .. s, '-inf', '(' .. before, 'BYSCORE', 'LIMIT', 0, limit, 'WITHSCORES')
    for j = 1, #r, 2 do cands[#cands + 1] = {id = r[j], at = tonumber(r[j + 1])} end
  end
end
table.sort(cands, function(a, b)
  if a.at ~= b.at then return a.at < b.at end
  return tonumber(a.id) < tonumber(b.id)
end)
local n, queues = 0, {}
for i = 1, math.min(limit, #cands) do
  local h = load(cands[i].id)
  if h then
    drop(h)
    queues[h.q] = true
    n = n + 1
  end
end
for q in pairs(queues) do
  local any = false
  for _, s in ipairs(STATES) do
    if rcall('ZCARD', sqKey(s, q)) > 0 then
      any = true
      break
    end
  end
  -- The queue's kinds go with it: an insert adds a queue to the set only when its kind is new
  -- to the queue (insertrun.lua).
  if not any then
    rcall('SREM', P .. 'queues', q)
    rcall('DEL', P .. 'kq:' .. q)
    forgetKinds()
  end
end
finish()
return n
