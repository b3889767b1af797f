#!ro
checkMeta()
return redis.call('HGETALL', P .. 'lim')
