#!ro
checkMeta()
return redis.call('HGET', KEYS[1], 'identity')
