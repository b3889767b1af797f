-- minutesprune: ARGV[4] a time in µs. Deletes the minutes before it (see minutesadd) and
-- returns how many rows they held.
checkMeta()
local n = 0
for _, m in ipairs(redis.call('ZRANGE', P .. 'min', '-inf', '(' .. ARGV[4], 'BYSCORE')) do
  n = n + redis.call('HLEN', P .. 'min:' .. m)
  redis.call('DEL', P .. 'min:' .. m)
  redis.call('ZREM', P .. 'min', m)
end
return n
