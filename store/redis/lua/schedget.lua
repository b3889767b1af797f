#!ro
-- schedget: ARGV[4] name, or '' for every schedule.
checkMeta()
if ARGV[4] ~= '' then return {rcall('HGETALL', P .. 'sch:' .. ARGV[4])} end
local out = {}
for _, n in ipairs(rcall('ZRANGE', P .. 'schs', 0, -1)) do
  out[#out + 1] = rcall('HGETALL', P .. 'sch:' .. n)
end
return out
