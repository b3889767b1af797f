-- migrate: ARGV[4] a fresh identity. Writes the namespace's meta once, and moves an older
-- version up; refuses a newer one, and a namespace that holds jobs but lost its meta (a partial
-- loss: ids would repeat).
local v = redis.call('HGET', KEYS[1], 'version')
if v then
  if tonumber(v) > tonumber(ARGV[3]) then return redis.error_reply('ROTA TOONEW ' .. v) end
  -- 1 → 2 added dependencies: fields and keys a version 1 namespace simply has none of. 2 → 3
  -- reads what 2 wrote (a set's flag) and writes what 2 misreads (one dependent inline). The
  -- version moves so that older builds refuse the namespace.
  if tonumber(v) < tonumber(ARGV[3]) then redis.call('HSET', KEYS[1], 'version', ARGV[3]) end
  return 'OK'
end
if redis.call('EXISTS', P .. 'seq') == 1 then
  return redis.error_reply('ROTA ORPHANED the namespace holds jobs but no meta key')
end
redis.call('HSET', KEYS[1], 'version', ARGV[3], 'identity', ARGV[4], 'created', NOWS)
return 'OK'
