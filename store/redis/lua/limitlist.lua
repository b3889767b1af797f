#!ro
checkMeta()
return rcall('HGETALL', P .. 'lim')
