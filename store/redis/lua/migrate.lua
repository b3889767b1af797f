-- migrate: ARGV[4] a fresh identity. Writes the namespace's meta once, and moves an older
-- version up; refuses a newer one, and a namespace that holds jobs but lost its meta (a partial
-- loss: ids would repeat).
local v = rcall('HGET', KEYS[1], 'version')
-- Whatever the namespace held, the kinds the library remembers naming (addKindOnce) are forgotten.
forgetKinds()
if v then
  if tonumber(v) > tonumber(ARGV[3]) then return redis.error_reply('ROTA TOONEW ' .. v) end
  -- 1 → 2 added dependencies: fields and keys a version 1 namespace simply has none of. 2 → 3
  -- reads what 2 wrote (a set's flag) and writes what 2 misreads (one dependent inline). 3 → 4
  -- drops the index of available jobs by age (avt:<q>) for the kinds of each queue (qk:<q>),
  -- filled here from the jobs it held: one read per available job, once. The version moves so
  -- that older builds refuse the namespace.
  if tonumber(v) < tonumber(ARGV[3]) then
    if tonumber(v) < 4 then
      for _, q in ipairs(rcall('SUNION', P .. 'queues', P .. 'paused')) do
        local avt, kinds = P .. 'avt:' .. q, {}
        local n = rcall('ZCARD', avt)
        for i = 0, n - 1, 1000 do
          for _, id in ipairs(rcall('ZRANGE', avt, i, i + 999)) do
            local k = rcall('HGET', jkey(id), 'k')
            if k and not kinds[k] then
              kinds[k] = true
              rcall('SADD', P .. 'qk:' .. q, k)
            end
          end
        end
        rcall('DEL', avt)
      end
    end
    -- 4 → 5 names the kinds registry kq:<q> and keeps it only for queues in the queues set, which
    -- a version 4 prune left behind when it forgot a queue (insertrun.lua adds a queue to the
    -- set only when its kind is new to it).
    if tonumber(v) < 5 then
      local queues = {}
      for _, q in ipairs(rcall('SMEMBERS', P .. 'queues')) do queues[q] = true end
      for _, q in ipairs(rcall('SUNION', P .. 'queues', P .. 'paused')) do
        local old = P .. 'qk:' .. q
        if queues[q] and rcall('EXISTS', old) == 1 then
          rcall('RENAME', old, P .. 'kq:' .. q)
        else
          rcall('DEL', old)
        end
      end
    end
    -- 5 → 6 marks some release entries direct (relEntry in the prelude) and writes nothing
    -- else differently: version 5's entries are not direct, and are read as before.
    -- From 5 on the id counter is named by its version (idKey in the prelude), so that the
    -- inserts of another version start one of their own at 1 and find out.
    local from = tonumber(v) < 5 and P .. 'seq' or P .. 'id:' .. v
    if rcall('EXISTS', from) == 1 then rcall('RENAME', from, idKey()) end
    rcall('HSET', KEYS[1], 'version', ARGV[3])
  end
  return 'OK'
end
if rcall('EXISTS', P .. 'seq', idKey()) > 0 then
  return redis.error_reply('ROTA ORPHANED the namespace holds jobs but no meta key')
end
rcall('HSET', KEYS[1], 'version', ARGV[3], 'identity', ARGV[4], 'created', NOWS)
return 'OK'
