-- scheddelete: ARGV[4] name, [5] the error (JSON string) for the jobs it cancels.
checkMeta()
local key = P .. 'sch:' .. ARGV[4]
if rcall('EXISTS', key) == 0 then return 'NOTFOUND' end
cancelPlanned(ARGV[4], ARGV[5])
rcall('DEL', key)
rcall('ZREM', P .. 'schs', ARGV[4])
finish()
return 'OK'
