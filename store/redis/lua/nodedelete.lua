-- nodedelete: ARGV[4] id ('' with ARGV[5] a time in µs: every node last seen before it).
-- Returns how many it removed.
checkMeta()
local ids = {ARGV[4]}
if ARGV[4] == '' then ids = rcall('ZRANGE', P .. 'nodes', '-inf', '(' .. ARGV[5], 'BYSCORE') end
local n = 0
for _, id in ipairs(ids) do
  n = n + rcall('ZREM', P .. 'nodes', id)
  rcall('DEL', P .. 'node:' .. id)
end
return n
