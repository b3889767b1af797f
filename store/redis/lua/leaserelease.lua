-- leaserelease: ARGV[4] name, [5] owner. The row stays, so the next holder's token grows.
checkMeta()
local key = P .. 'lease:' .. ARGV[4]
if rcall('HGET', key, 'o') == ARGV[5] then rcall('HSET', key, 'o', '', 'x', NOWS) end
return 'OK'
