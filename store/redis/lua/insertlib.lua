-- insertJobs inserts n jobs whose fields start at ARGV[base], NF per job, in order, so that a
-- later job of the call sees the keys earlier ones took. It returns, per job, {'N', id, state}
-- or {'D', holder row}, the ids it cancelled by supersede, and the queues given available jobs.
local NF = 13
local function insertJobs(base, n)
  local out, cancelled, avail = {}, {}, {}
  local known = {} -- queues added to the queues set by this call: once each, not once per job
  -- Inserts read job hashes and uq, never an index, so the index writes go out together.
  deferIndex()
  for j = 0, n - 1 do
    local b = base + j * NF
    local ukey, supersede = ARGV[b + 7], ARGV[b + 9]
    local dup
    if ukey ~= '' then
      local holder = redis.call('HGET', P .. 'uq', ukey)
      if holder then
        local h = load(holder)
        if supersede == '1' and not FINAL[h.s] then
          if h.s == 'running' then
            save(h, {us = false})
            redis.call('HDEL', P .. 'uq', ukey)
          else
            move(h, 'cancelled', {z = NOWS})
            cancelled[#cancelled + 1] = h.i
          end
          dup = redis.call('HGET', P .. 'uq', ukey) -- a cancelled holder may keep its key
        else
          dup = holder
        end
      end
    end
    if dup then
      out[#out + 1] = {'D', dup}
    else
      local id = fmt(redis.call('INCR', P .. 'seq'))
      local r = ARGV[b + 5]
      if r == '' then r = NOWS end
      local state = 'available'
      if tonumber(r) > NOW then state = 'scheduled' end
      local h = {i = id, k = ARGV[b], q = ARGV[b + 1], A = ARGV[b + 2], p = ARGV[b + 3], m = ARGV[b + 4],
        r = r, s = state, a = '0', f = '0', c = NOWS}
      if ARGV[b + 6] ~= '' then h.x = ARGV[b + 6] end
      if ukey ~= '' then
        h.u = ukey
        if ARGV[b + 8] ~= '' then h.us = ARGV[b + 8] end
      end
      if ARGV[b + 10] ~= '' then h.sc = ARGV[b + 10] end
      if ARGV[b + 11] ~= '' then h.T = ARGV[b + 11] end
      if ARGV[b + 12] ~= '' then h.M = ARGV[b + 12] end
      local flat = {}
      for k, v in pairs(h) do
        flat[#flat + 1] = k
        flat[#flat + 1] = v
      end
      redis.call('HSET', jkey(id), unpack(flat))
      index(h)
      if not known[h.q] then
        known[h.q] = true
        redis.call('SADD', P .. 'queues', h.q)
      end
      if h.u and wants(h, state) then redis.call('HSET', P .. 'uq', h.u, id) end
      if state == 'available' then avail[h.q] = true end
      out[#out + 1] = {'N', id, state}
    end
  end
  flushIndex()
  for _, r in ipairs(out) do
    if r[1] == 'D' then r[2] = row(r[2]) end
  end
  return out, cancelled, avail
end

-- publishInserts tells other Stores that jobs became available, once per queue per call. The
-- origin lets the inserting Store's listener drop the echo: it told its own subscribers already.
local function publishInserts(origin, avail)
  for q in pairs(avail) do
    redis.call('PUBLISH', P .. 'ev', 'i ~' .. origin .. ' ' .. q)
  end
end
