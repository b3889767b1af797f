#!ro
checkMeta()
return redis.call('HMGET', P .. 'lease:' .. ARGV[4], 'o', 't', 'a', 'x')
