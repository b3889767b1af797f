-- migrate: ARGV[4] a fresh identity. Writes the namespace's meta once, and moves an older
-- version up; refuses a newer one, and a namespace that holds jobs but lost its meta (a partial
-- loss: ids would repeat).
local v = redis.call('HGET', KEYS[1], 'version')
if v then
  if tonumber(v) > tonumber(ARGV[3]) then return redis.error_reply('ROTA TOONEW ' .. v) end
  -- 1 → 2 added dependencies: fields and keys a version 1 namespace simply has none of. 2 → 3
  -- reads what 2 wrote (a set's flag) and writes what 2 misreads (one dependent inline). 3 → 4
  -- drops the index of available jobs by age (avt:<q>) for the kinds of each queue (qk:<q>),
  -- filled here from the jobs it held: one read per available job, once. The version moves so
  -- that older builds refuse the namespace.
  if tonumber(v) < tonumber(ARGV[3]) then
    if tonumber(v) < 4 then
      for _, q in ipairs(redis.call('SUNION', P .. 'queues', P .. 'paused')) do
        local avt, kinds = P .. 'avt:' .. q, {}
        local n = redis.call('ZCARD', avt)
        for i = 0, n - 1, 1000 do
          for _, id in ipairs(redis.call('ZRANGE', avt, i, i + 999)) do
            local k = redis.call('HGET', jkey(id), 'k')
            if k and not kinds[k] then
              kinds[k] = true
              redis.call('SADD', P .. 'qk:' .. q, k)
            end
          end
        end
        redis.call('DEL', avt)
      end
    end
    redis.call('HSET', KEYS[1], 'version', ARGV[3])
  end
  return 'OK'
end
if redis.call('EXISTS', P .. 'seq') == 1 then
  return redis.error_reply('ROTA ORPHANED the namespace holds jobs but no meta key')
end
redis.call('HSET', KEYS[1], 'version', ARGV[3], 'identity', ARGV[4], 'created', NOWS)
return 'OK'
