-- schedpause: ARGV[4] name, [5] '1' or '0'.
checkMeta()
local key = P .. 'sch:' .. ARGV[4]
if rcall('EXISTS', key) == 0 then return 'NOTFOUND' end
rcall('HSET', key, 'pa', ARGV[5])
return 'OK'
