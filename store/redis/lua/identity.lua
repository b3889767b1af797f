#!ro
checkMeta()
return rcall('HGET', KEYS[1], 'identity')
