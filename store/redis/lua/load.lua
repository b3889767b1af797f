#!ro
-- load: ARGV[4] queue: available count, running count, paused.
checkMeta()
local q = ARGV[4]
return {redis.call('ZCARD', P .. 'sq:available:' .. q), redis.call('ZCARD', P .. 'sq:running:' .. q),
  redis.call('SISMEMBER', P .. 'paused', q)}
