-- retry: ARGV[4] id. Makes a job that is not running available now, with one more attempt if
-- its attempts are used up; a past expiry goes with the retry, and a pending job no longer
-- waits (move forgets its count; the edges its dependencies hold find it no longer pending).
checkMeta()
local h = load(ARGV[4])
if not h then return {'NOTFOUND'} end
if h.s == 'running' then return {'RUNNING'} end
local f = {r = NOWS, m = fmt(math.max(tonumber(h.m), tonumber(h.a or '0') + 1)), cr = false, o = false, l = false, z = false}
if h.x and tonumber(h.x) <= NOW then f.x = false end
move(h, 'available', f)
RELEASED[h.q] = true
finish()
return {'OK', row(h.i)}
