#!ro
-- load: ARGV[4] queue: available count, running count, paused.
checkMeta()
local q = ARGV[4]
return {rcall('ZCARD', P .. 'sq:available:' .. q), rcall('ZCARD', P .. 'sq:running:' .. q),
  rcall('SISMEMBER', P .. 'paused', q)}
