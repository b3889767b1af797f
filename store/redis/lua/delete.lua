-- delete: ARGV[4] id.
checkMeta()
local h = load(ARGV[4])
if not h then return {'NOTFOUND'} end
if h.s == 'running' then return {'RUNNING'} end
drop(h)
return {'OK'}
