#!ro
-- stats: per queue that has jobs or is paused: name, paused, the count of every state (in
-- STATES order), and the oldest available job's run_at ('' when none).
checkMeta()

-- oldest is the earliest run_at of queue q's available jobs, '' when it has none. Each ready set
-- is ordered by priority, then by member, which starts with the job's run_at: the earliest is at
-- the head of one of its priority bands, so this reads one member per band and kind of q
-- (kq:<q>, see addReadyList), not the jobs.
local function oldest(q)
  local best
  for _, k in ipairs(rcall('SMEMBERS', P .. 'kq:' .. q)) do
    local key = rkey(q, k)
    local h = rcall('ZRANGE', key, 0, 0, 'WITHSCORES')
    while #h > 0 do
      local r = string.sub(h[1], 1, 16)
      if not best or r < best then best = r end
      h = rcall('ZRANGE', key, '(' .. h[2], '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
    end
  end
  if not best then return '' end
  return fmt(tonumber(best))
end

local out = {}
for _, q in ipairs(rcall('SUNION', P .. 'queues', P .. 'paused')) do
  local r = {q, rcall('SISMEMBER', P .. 'paused', q)}
  for _, s in ipairs(STATES) do r[#r + 1] = rcall('ZCARD', sqKey(s, q)) end
  -- STATES[1] is available.
  if r[3] > 0 then r[#r + 1] = oldest(q) else r[#r + 1] = '' end
  out[#out + 1] = r
end
return out
