#!ro
checkMeta()
return rcall('HMGET', P .. 'lease:' .. ARGV[4], 'o', 't', 'a', 'x')
