-- noderegister: ARGV[4] id, [5] the node as JSON. LastSeen is the zset's score.
checkMeta()
rcall('SET', P .. 'node:' .. ARGV[4], ARGV[5])
rcall('ZADD', P .. 'nodes', NOWS, ARGV[4])
return 'OK'
