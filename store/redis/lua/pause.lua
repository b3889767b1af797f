-- pause: ARGV[4] queue, [5] '1' to pause, '' to resume (which wakes the queue's nodes).
checkMeta()
if ARGV[5] == '1' then
  redis.call('SADD', P .. 'paused', ARGV[4])
elseif redis.call('SREM', P .. 'paused', ARGV[4]) == 1 then
  redis.call('PUBLISH', P .. 'ev', 'i ' .. ARGV[4])
end
return 'OK'
