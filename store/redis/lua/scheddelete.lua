-- scheddelete: ARGV[4] name, [5] the error (JSON string) for the jobs it cancels.
checkMeta()
local key = P .. 'sch:' .. ARGV[4]
if redis.call('EXISTS', key) == 0 then return 'NOTFOUND' end
cancelPlanned(ARGV[4], ARGV[5])
redis.call('DEL', key)
redis.call('ZREM', P .. 'schs', ARGV[4])
finish()
return 'OK'
