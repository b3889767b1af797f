-- schedpause: ARGV[4] name, [5] '1' or '0'.
checkMeta()
local key = P .. 'sch:' .. ARGV[4]
if redis.call('EXISTS', key) == 0 then return 'NOTFOUND' end
redis.call('HSET', key, 'pa', ARGV[5])
return 'OK'
