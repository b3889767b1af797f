-- insertrun: insert's script for a call whose jobs are one run of plain jobs (ARGV as insert's,
-- its one record a 'P' run), as nearly every call of producers inserting one job at a time is.
-- It writes what insert would, without insertJobs' passes for jobs sent whole (dependencies,
-- duplicates, supersedes) and without finish(), which has nothing to settle or announce for
-- new plain jobs: through insert, such a call of one job cost Redis more than half again.
checkMeta()
local newId, closeIds = idSource(tonumber(ARGV[5]))
local avail = {}
byQueue = {}
insertRun(6, newId, {}, avail, nil, 0)
flushPlain()
publishInserts(ARGV[4], avail)
return {NOWS, {}, {}, closeIds()}
