#!ro
-- rescuefind: ARGV[4] limit. Running jobs whose lease ended before now (held through
-- lease_until), oldest lease first: id, fence, attempt, max attempts, owner. Whether a cancel
-- was requested is read by rescue, which applies the end.
checkMeta()
local out = {}
for _, id in ipairs(rcall('ZRANGE', P .. 'run', '-inf', '(' .. NOWS, 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[4]))) do
  local v = rcall('HMGET', jkey(id), 'f', 'a', 'm', 'o', 's')
  if v[5] == 'running' then out[#out + 1] = {id, v[1], v[2], v[3], v[4] or ''} end
end
return out
