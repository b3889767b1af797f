-- cancel: ARGV[4] id. A running job gets the request; a final one is left as it is.
checkMeta()
local h = load(ARGV[4])
if not h then return {'NOTFOUND'} end
if h.s == 'running' then
  if not h.cr then save(h, {cr = '1'}) end
elseif not FINAL[h.s] then
  move(h, 'cancelled', {z = NOWS})
end
finish()
return {'OK', row(h.i)}
