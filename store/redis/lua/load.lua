#!ro
-- load: ARGV[4] queue: available count, running count, paused.
checkMeta()
local q = ARGV[4]
return {rcall('ZCARD', sqKey('available', q)), rcall('ZCARD', sqKey('running', q)),
  rcall('SISMEMBER', P .. 'paused', q)}
