#!oom
-- minutesprune: ARGV[4] a time in µs. Deletes the minutes before it (see minutesadd) and
-- returns how many rows they held.
checkMeta()
local n = 0
for _, m in ipairs(rcall('ZRANGE', P .. 'min', '-inf', '(' .. ARGV[4], 'BYSCORE')) do
  n = n + rcall('HLEN', P .. 'min:' .. m)
  rcall('DEL', P .. 'min:' .. m)
  rcall('ZREM', P .. 'min', m)
end
return n
