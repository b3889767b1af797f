-- heartbeat: ARGV[4] owner, [5] lease µs. Extends the owner's running jobs; returns those a
-- user asked to cancel.
checkMeta()
local owner, untilS = ARGV[4], fmt(NOW + tonumber(ARGV[5]))
local cr = {}
for _, id in ipairs(rcall('SMEMBERS', P .. 'own:' .. owner)) do
  local k = jkey(id)
  local v = rcall('HMGET', k, 's', 'o', 'cr')
  if v[1] == 'running' and v[2] == owner then
    rcall('HSET', k, 'l', untilS)
    rcall('ZADD', P .. 'run', 'XX', untilS, id)
    if v[3] then cr[#cr + 1] = id end
  end
end
return cr
