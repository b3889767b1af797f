-- schedupsert: ARGV[4] name, then expr, zone, kind, queue, args, priority, max attempts, tags,
-- missed, paused ('1'/'0'), and the error (JSON string) for jobs cancelled by a timing change.
checkMeta()
local name = ARGV[4]
local key = P .. 'sch:' .. name
local old = {}
local flat = rcall('HGETALL', key)
for i = 1, #flat, 2 do old[flat[i]] = flat[i + 1] end
local f = {n = name, e = ARGV[5], zn = ARGV[6], k = ARGV[7], q = ARGV[8], A = ARGV[9], p = ARGV[10],
  m = ARGV[11], T = ARGV[12], mi = ARGV[13], u = NOWS}
if old.n then
  f.pa, f.lp, f.c = old.pa, old.lp, old.c
  if old.e ~= f.e or old.zn ~= f.zn then
    cancelPlanned(name, ARGV[15])
    f.lp = NOWS
  end
else
  f.pa, f.lp, f.c = ARGV[14], '', NOWS
  rcall('ZADD', P .. 'schs', 0, name)
end
hsetAll(key, f)
finish()
return rcall('HGETALL', key)
