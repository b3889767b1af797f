#!ro
-- schedget: ARGV[4] name, or '' for every schedule.
checkMeta()
if ARGV[4] ~= '' then return {redis.call('HGETALL', P .. 'sch:' .. ARGV[4])} end
local out = {}
for _, n in ipairs(redis.call('ZRANGE', P .. 'schs', 0, -1)) do
  out[#out + 1] = redis.call('HGETALL', P .. 'sch:' .. n)
end
return out
