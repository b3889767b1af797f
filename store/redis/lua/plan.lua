-- plan: ARGV[4] origin, [5] name, [6] from µs ('' for never planned), [7] to µs, [8] n, then the
-- jobs (see insertJobs). A compare-and-set of LastPlanned with the inserts of the occurrences.
checkMeta()
local key = P .. 'sch:' .. ARGV[5]
local lp = rcall('HGET', key, 'lp')
if not lp or lp ~= ARGV[6] then return 0 end
rcall('HSET', key, 'lp', ARGV[7])
local _, _, avail = insertJobs(9, tonumber(ARGV[8]))
publishInserts(ARGV[4], avail)
finish()
return 1
