-- pause: ARGV[4] queue, [5] '1' to pause, '' to resume (which wakes the queue's nodes).
checkMeta()
if ARGV[5] == '1' then
  rcall('SADD', P .. 'paused', ARGV[4])
elseif rcall('SREM', P .. 'paused', ARGV[4]) == 1 then
  rcall('PUBLISH', P .. 'ev', 'i ' .. ARGV[4])
end
return 'OK'
