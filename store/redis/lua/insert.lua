-- insert: ARGV[4] origin, ARGV[5] n, then the jobs (see insertJobs).
checkMeta()
local out, cancelled, avail, first = insertJobs(6, tonumber(ARGV[5]))
publishInserts(ARGV[4], avail)
finish()
return {NOWS, out, cancelled, first or ''}
