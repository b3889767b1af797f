-- insertJobs inserts n jobs whose records start at ARGV[base], in order, so that a later job
-- of the call sees the keys earlier ones took. A record is either a run of plain jobs (no unique
-- key, expiry, schedule or dependency fields) alike but for their args: 'P', kind, queue,
-- priority, max attempts, run_at ('' for now), tags, metadata, count, then each job's args; or
-- one job sent whole: 'J' and its NF fields (see appendJob). A batch of one kind's jobs is then
-- about one argument per job: Redis parses, and Lua interns, every argument.
-- It returns, per job sent whole, the new id, or {'1', holder's row} for a duplicate, or for a
-- new job with dependency fields (see insertdeps), whose state the script decides, {'2', id,
-- state} ({'0', its row} when cancelled); then the ids it cancelled by supersede, the queues
-- given available jobs, and the id of its first new job (nil when none). New jobs take ids one
-- after another in the call's order, so the caller knows a run's ids from the first and what
-- the jobs sent whole were given; and a job of a run is scheduled iff its run_at is after NOW:
-- neither is sent back per job.
local NF = 14
-- plainIndex gathers the index writes of a plain new job (index() for it, without its
-- concatenations per job); flushPlain sends them, one variadic call per key. insertJobs starts
-- it empty: the library's state outlives a call.
local byQueue
local function plainIndex(q, k, p, r, id, state)
  local g = byQueue[q]
  if not g then
    g = {available = {}, scheduled = {}, ready = {}, wait = {}}
    byQueue[q] = g
  end
  local l = g[state]
  l[#l + 1], l[#l + 2] = id, id
  if state == 'available' then
    addReady(g.ready, k, p, r, id)
  else
    l = g.wait
    l[#l + 1], l[#l + 2] = r, id
  end
end
local function flushPlain()
  for q, g in pairs(byQueue) do
    variadic('ZADD', sqKey('available', q), g.available)
    variadic('ZADD', sqKey('scheduled', q), g.scheduled)
    variadic('ZADD', P .. 'w:' .. q, g.wait)
    flushReady(q, g.ready)
  end
  byQueue = {}
end
-- runStart is a run's RunAt ('' for now) as its jobs keep it, and the state they take.
local function runStart(r)
  if r == '' then return NOWS, 'available' end
  if tonumber(r) > (NOW or tonumber(NOWS)) then return r, 'scheduled' end
  return r, 'available'
end
-- hsetPlain writes a new plain job's hash, its tags and metadata ('' for none) the run's. The
-- fields go straight into the call: a table and unpack cost ~1-2 µs more per job. A job never
-- claimed has no attempt or fence field ('a', 'f'): they read as 0 (claim.lua, errLine), and each
-- field of a hash costs Redis about 1.4 µs to write.
local function hsetPlain(id, k, q, args, p, m, r, state, tags, meta)
  local jk = jkey(id)
  rcall('HSET', jk, 'i', id, 'k', k, 'q', q, 'A', args, 'p', p, 'm', m, 'r', r,
    's', state, 'c', NOWS)
  if tags ~= '' and meta ~= '' then
    rcall('HSET', jk, 'T', tags, 'M', meta)
  elseif tags ~= '' then
    rcall('HSET', jk, 'T', tags)
  elseif meta ~= '' then
    rcall('HSET', jk, 'M', meta)
  end
end
-- insertRun writes the run of plain jobs whose 'P' record starts at ARGV[b], directly, its
-- index writes gathered in lists (see plainIndex), with ids from newId. known holds the queues
-- the call added to the queues set (once each, not once per job), avail those given available
-- jobs; ids, when set, takes each new id by its job index, from j. It returns where the next
-- record starts and the next job index.
local function insertRun(b, newId, known, avail, ids, j)
  local k, q, p, m, tags, meta = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 6], ARGV[b + 7]
  local last = b + 8 + tonumber(ARGV[b + 8])
  local r, state = runStart(ARGV[b + 5])
  if not known[q] then
    known[q] = true
    rcall('SADD', P .. 'queues', q)
  end
  if state == 'available' then avail[q] = true end
  for a = b + 9, last do
    local id = newId()
    hsetPlain(id, k, q, ARGV[a], p, m, r, state, tags, meta)
    plainIndex(q, k, p, r, id, state)
    if ids then
      ids[j] = id
      EDGES[id] = false -- new: no dependents to read (addEdge)
    end
    j = j + 1
  end
  return last + 1, j
end

-- idSource hands out a call's n ids: take() returns the next, the ids being taken by newIds in
-- one call of n at the first (one call per job cost ~1 µs each); close() gives back those not
-- taken (a call's duplicates take none) and returns the first id, or nil when none was taken.
local function idSource(n)
  local nextId, lastId
  local function take()
    if not nextId then
      nextId = newIds(n)
      lastId = nextId + n - 1
    end
    nextId = nextId + 1
    return fmt(nextId - 1)
  end
  local function close()
    if not nextId then return nil end
    if nextId <= lastId then rcall('SET', idKey(), fmt(nextId - 1)) end
    return fmt(lastId - n + 1)
  end
  return take, close
end

local function insertJobs(base, n)
  local out, cancelled, avail = {}, {}, {}
  local newId, closeIds = idSource(n)
  byQueue, PLACED, PLACES = {}, {}, {}
  local numbered = {} -- new jobs whose step the call named: their rows go back whole
  local known = {} -- queues added to the queues set by this call: once each, not once per job
  -- The whole jobs' positions first: their dependency fields are checked before any write.
  local full, b, j = {}, base, 0
  while j < n do
    if ARGV[b] == 'P' then
      local m = tonumber(ARGV[b + 8])
      b, j = b + 9 + m, j + m
    else
      full[#full + 1] = {j, b + 1}
      b, j = b + 1 + NF, j + 1
    end
  end
  local deps = readDeps(full, 13)
  -- ids, by job index from 0, is the new job's id or the duplicate's holder: what DependsOnIndex
  -- names, kept only for a call that has dependency fields.
  local ids = next(deps) and {}
  -- Inserts read job hashes and uq, never an index, so the index writes go out together.
  deferIndex()
  b, j = base, 0
  while j < n do
    if ARGV[b] == 'P' then
      b, j = insertRun(b, newId, known, avail, ids, j)
    else
      -- A job sent whole: its fields at ARGV[b + 1 ...].
      b = b + 1
      local ukey, supersede = ARGV[b + 7], ARGV[b + 9]
      local dup
      if ukey ~= '' then
        local holder = rcall('HGET', P .. 'uq', ukey)
        if holder then
          local h = load(holder)
          if supersede == '1' and not FINAL[h.s] then
            if h.s == 'running' then
              save(h, {us = false})
              rcall('HDEL', P .. 'uq', ukey)
            else
              move(h, 'cancelled', {z = NOWS})
              cancelled[#cancelled + 1] = h.i
            end
            dup = rcall('HGET', P .. 'uq', ukey) -- a cancelled holder may keep its key
          else
            dup = holder
          end
        end
      end
      local dx = deps[j] -- its dependency fields, if any
      if dup then
        out[#out + 1] = {'1', dup}
        if ids then ids[j] = dup end
        -- A duplicate joins nothing (DependencyOf): the job holding the key is not the call's.
      else
        local id = newId()
        local r = ARGV[b + 5]
        if r == '' then r = NOWS end
        local state = 'available'
        if tonumber(r) > NOW then state = 'scheduled' end
        local h = {i = id, k = ARGV[b], q = ARGV[b + 1], A = ARGV[b + 2], p = ARGV[b + 3], m = ARGV[b + 4],
          r = r, s = state, c = NOWS}
        if ARGV[b + 6] ~= '' then h.x = ARGV[b + 6] end
        if ukey ~= '' then
          h.u = ukey
          if ARGV[b + 8] ~= '' then h.us = ARGV[b + 8] end
        end
        if ARGV[b + 10] ~= '' then h.sc = ARGV[b + 10] end
        if ARGV[b + 11] ~= '' then h.T = ARGV[b + 11] end
        if ARGV[b + 12] ~= '' then h.M = ARGV[b + 12] end
        if dx then
          if dx.w ~= '' then h.W = dx.w end
          if dx.st ~= '' then h.st = dx.st end
          if dx.n then
            h.st = dx.st .. nextPlace(dx.of)
            numbered[id] = true
          end
          if dx.ig then h.ig = '1' end
          state = waitOn(h, dx, ids, state)
          h.s = state
        end
        hsetAll(jkey(id), h)
        EDGES[id] = false
        index(h)
        if not known[h.q] then
          known[h.q] = true
          rcall('SADD', P .. 'queues', h.q)
        end
        if h.u and wants(h, state) then rcall('HSET', P .. 'uq', h.u, id) end
        if state == 'available' then avail[h.q] = true end
        if ids then ids[j] = id end
        if dx then
          if FINAL[state] then FINALS[#FINALS + 1] = id end
          if h.W then placeInWorkflow(h) end
          if dx.of ~= '' then join(dx.of, id, state) end
          out[#out + 1] = {'0', id}
        else
          out[#out + 1] = id
        end
      end
      b, j = b + NF, j + 1
    end
  end
  local first = closeIds()
  flushIndex()
  flushPlain()
  -- Rows are read once what the call ended (by supersede) has settled its dependents.
  settleDeps()
  for i, r in ipairs(out) do
    if type(r) == 'table' then
      if r[1] == '0' then
        -- A new job with dependency fields: the caller builds its row from what it sent and
        -- the state the call left it in ({'2', id, state}), as for a plain job; one left
        -- cancelled comes whole, for its error, and so does one whose step the call named. A
        -- fan-in's steps are thousands of rows.
        local st = rcall('HGET', jkey(r[2]), 's')
        if st == 'cancelled' or numbered[r[2]] then out[i] = {'0', row(r[2])} else out[i] = {'2', r[2], st} end
      else
        out[i] = {r[1], row(r[2])}
      end
    end
  end
  return out, cancelled, avail, first
end

-- publishInsert tells other Stores that jobs became available in queue q; publishInserts does,
-- once per queue per call. The origin lets the inserting Store's listener drop the echo: it told
-- its own subscribers already.
local function makeInsertMessage(origin, q) return 'i ~' .. origin .. ' ' .. q end
local function publishInsert(origin, q)
  local ev, t = NSK.ev, NSK.pub[origin]
  if not ev then ev = P .. 'ev'; NSK.ev = ev end
  rcall('PUBLISH', ev, t and t[q] or nskText('pub', origin, q, makeInsertMessage))
end
local function publishInserts(origin, avail)
  for q in pairs(avail) do publishInsert(origin, q) end
end
