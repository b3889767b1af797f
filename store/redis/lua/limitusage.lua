#!ro
-- limitusage: ARGV[4] queue, [5] kind. The limits a claim of the kind in the queue is held to,
-- the queue's first, each as {scope, name, spec, running, started}, counted as a claim counts
-- them (readLimit), writing nothing.
checkMeta()
local out = {}
for _, u in ipairs({readLimit('queue', ARGV[4]) or false, readLimit('kind', ARGV[5]) or false}) do
  if u then out[#out + 1] = {u.scope, u.name, u.spec, u.running, u.started} end
end
return out
