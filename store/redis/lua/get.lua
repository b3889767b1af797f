#!ro
-- get: ARGV[4..] ids. Their rows, in order; an empty one for a job the store does not hold.
checkMeta()
local out = {}
for i = 4, #ARGV do out[#out + 1] = row(ARGV[i]) end
return out
