#!oom
-- delete: ARGV[4] id. The pending jobs that waited for it, when it had not ended, end cancelled.
checkMeta()
local h = load(ARGV[4])
if not h then return {'NOTFOUND'} end
if h.s == 'running' then return {'RUNNING'} end
drop(h)
finish()
return {'OK'}
