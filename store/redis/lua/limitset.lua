-- limitset: ARGV[4] "scope:name", [5] "max,rate,period_µs" ('' removes), [6] '1' when the limit
-- has no rate (now): its starts are forgotten, so a rate given again starts with an empty window.
checkMeta()
local name = ARGV[4]
if ARGV[5] == '' then
  rcall('HDEL', P .. 'lim', name)
else
  rcall('HSET', P .. 'lim', name, ARGV[5])
end
if ARGV[6] == '1' then
  rcall('DEL', P .. 'rs:' .. name)
  rcall('HDEL', P .. 'rsum', name)
end
return 'OK'
