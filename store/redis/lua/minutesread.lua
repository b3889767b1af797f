#!ro
-- minutesread: ARGV[4] the first minute in µs. Returns, per row, minute, field, value (see
-- minutesadd).
checkMeta()
local out = {}
for _, m in ipairs(rcall('ZRANGE', P .. 'min', ARGV[4], '+inf', 'BYSCORE')) do
  local h = rcall('HGETALL', P .. 'min:' .. m)
  for i = 1, #h, 2 do out[#out + 1] = {m, h[i], h[i + 1]} end
end
return out
