-- claim: ARGV[4] queue, [5] owner, [6] lease µs, [7] max, [8] number of kinds, then the kinds.
-- Expires and promotes the queue's due jobs, plans the claim under its limits, merges the heads
-- of the kinds' ready sets in claim order, then writes: nothing is written before the plan.
checkMeta()
local queue, owner, lease, want, nk = ARGV[4], ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local kinds, seen = {}, {}
for i = 1, nk do
  local k = ARGV[8 + i]
  if not seen[k] then
    seen[k] = true
    kinds[#kinds + 1] = k
  end
end
if #kinds == 0 or want <= 0 then return {} end
if rcall('SISMEMBER', P .. 'paused', queue) == 1 then return {} end

-- 1. Jobs past their ExpiresAt end expired, whatever their kind. Each step flushes its deferred
-- index writes before the next reads an index.
deferIndex()
for _, id in ipairs(rcall('ZRANGE', P .. 'x:' .. queue, '-inf', NOWS, 'BYSCORE', 'LIMIT', '0', '1000')) do
  local h = load(id)
  if h and CLAIMABLE[h.s] then move(h, 'expired', {z = NOWS}) end
end
flushIndex()
-- 2. Due scheduled and retryable jobs become available, keeping their RunAt (and place).
deferIndex()
for _, id in ipairs(rcall('ZRANGE', P .. 'w:' .. queue, '-inf', NOWS, 'BYSCORE', 'LIMIT', '0', num(math.max(1000, 4 * want)))) do
  local h = load(id)
  if h then move(h, 'available', {}) end
end
flushIndex()

-- 3. Limits, read by the prelude's readLimit, and what each allows now (store/internal/
-- limitplan's arithmetic, which must run here, atomically with the counting).
local function allowance(u)
  local n = want
  if u.max > 0 then n = math.min(n, u.max - u.running) end
  if u.rate > 0 then n = math.min(n, u.rate - u.started) end
  return math.max(n, 0)
end
local budget = want
local ql = readLimit('queue', queue, true)
if ql then budget = math.min(budget, allowance(ql)) end
local caps, kls = {}, {}
for _, k in ipairs(kinds) do
  local u = readLimit('kind', k, true)
  if u then
    kls[k] = u
    caps[k] = allowance(u)
  end
end

-- 4. Merge the kinds' ready sets by (-priority, run_at, id); a capped kind blocks nobody.
local iters = {}
for _, k in ipairs(kinds) do
  local c = budget
  if caps[k] then c = math.min(c, caps[k]) end
  if c > 0 then iters[#iters + 1] = {key = rkey(queue, k), kind = k, off = 0, n = budget, ms = {}, ss = {}, pos = 1, done = false} end
end
-- A kind's set is first read budget members at a time (it.n): the claim takes no more than that
-- from one kind, and each member read past what it takes cost Redis ~1 µs to hand to Lua (a
-- claim of one read sixteen). Members it steps over (expired jobs past those step 1 ended)
-- double the next read, up to a thousand.
-- With one kind there is nothing to merge: its set is read without scores, and no entry becomes
-- a table (each costs ~0.7 µs in this Lua).
local scored = #iters > 1
local function head(it)
  if it.pos > #it.ms then
    if it.done then return nil end
    it.ms, it.ss, it.pos = {}, {}, 1
    local chunk = it.n
    if scored then
      local r = rcall('ZRANGE', it.key, num(it.off), num(it.off + chunk - 1), 'WITHSCORES')
      for i = 1, #r, 2 do
        it.ms[#it.ms + 1] = r[i]
        it.ss[#it.ss + 1] = tonumber(r[i + 1])
      end
    else
      it.ms = rcall('ZRANGE', it.key, num(it.off), num(it.off + chunk - 1))
    end
    it.off = it.off + chunk
    if chunk < 1000 then it.n = math.min(2 * chunk, 1000) end
    if #it.ms < chunk then it.done = true end
    if #it.ms == 0 then return nil end
  end
  return it.ms[it.pos], it.ss[it.pos]
end
-- A taken job is kept as columns (its id, kind, ready-set member, reply and picked fields v), not
-- as a table of its own per job (~1 µs each in this Lua); only a job with an expiry, a unique key
-- or a schedule, which goes through move(), gets its table, in gen.
local nt, tId, tKind, tMember, tRow, tV, gen = 0, {}, {}, {}, {}, {}, {}
local expired = {}
-- job is the table move() takes for a job read by the merge (v: its fields picked below).
local function job(id, k, v, best)
  local h = {i = id, s = v[1], k = k, q = queue, a = v[2] or '0', f = v[3] or '0', x = v[4] or nil,
    u = v[5] or nil, us = v[6] or nil, sc = v[7] or nil, W = v[8] or nil}
  RMEMBER[h] = best
  return h
end
while budget > 0 do
  local best, bestSc, bit
  for _, it in ipairs(iters) do
    if not it.capped then
      local m, sc = head(it)
      if m and (not best or sc < bestSc or (sc == bestSc and m < best)) then
        best, bestSc, bit = m, sc, it
      end
    end
  end
  if not best then break end
  bit.pos = bit.pos + 1
  -- The member's id part without its zeros: one pattern match, not a round trip through a number.
  local id = string.match(best, '^0*(%d+)', 17)
  -- The job is read whole, once: the fields the claim decides by are picked out of it here,
  -- and the same reply, with the new attempt and fence written into it, is the row it hands back
  -- (a second read per job cost more than the picking). v[10] and v[11] are where the attempt's
  -- and the fence's values are in the reply.
  local flat = rcall('HGETALL', jkey(id))
  local v = {false, false, false, false, false, false, false, false, false, false, false}
  for i = 1, #flat, 2 do
    local slot = PICKED[flat[i]]
    if slot then
      v[slot] = flat[i + 1]
      if slot == 2 then
        v[10] = i + 1
      elseif slot == 3 then
        v[11] = i + 1
      end
    end
  end
  if v[1] == 'available' then
    local k = bit.kind
    if v[4] and tonumber(v[4]) <= NOW then
      local h = job(id, k, v, best)
      h.dp = v[9] or nil
      expired[#expired + 1] = h
    else
      nt = nt + 1
      tId[nt], tKind[nt], tMember[nt], tRow[nt], tV[nt] = id, k, best, flat, v
      if v[4] or v[5] or v[7] then gen[nt] = job(id, k, v, best) end
      budget = budget - 1
      if caps[k] then
        caps[k] = caps[k] - 1
        if caps[k] <= 0 then bit.capped = true end
      end
    end
  end
end

-- 5. Write: the expired end, the taken run, and the rate limits record their starts. Nothing
-- here reads an index, so the index writes go out together at the end.
deferIndex()
for _, h in ipairs(expired) do move(h, 'expired', {z = NOWS}) end
local ids, rows, perKind = {}, {}, {}
-- Formatting a number costs ~0.7 µs: the lease end is the same for every job of the call, and
-- the fence is now unless the job's last fence was later.
local until_ = fmt(NOW + lease)
-- Plain jobs (no expiry, unique key or schedule) get exactly what move() writes for them, as
-- lists sent in one variadic call per key after the loop: move()'s generic tables and the
-- per-job index calls cost more than the writes themselves here, the hottest script.
local plain, byKind, wr = {}, {}, wfRun('available')
for j = 1, nt do
  local id, k, v = tId[j], tKind[j], tV[j]
  local f = v[3] -- false for a job never claimed: its fence is 0
  local fence = NOWS
  if f and tonumber(f) + 1 > NOW then fence = fmt(tonumber(f) + 1) end
  local a = nextAttempt(v[2] or '0')
  local h = gen[j]
  if h then
    move(h, 'running', {a = a, f = fence, o = owner, ab = owner, l = until_, t = NOWS})
    rows[#rows + 1] = false -- read once every write is made (settleKey may change it)
  else
    rcall('HSET', jkey(id), 's', 'running', 'a', a, 'f', fence, 'o', owner, 'ab', owner, 'l', until_, 't', NOWS)
    -- Its row is what the merge read, with the attempt and fence written in their places (or
    -- after it, when the hash had none: a later field of a hash's reply wins in decodeJob); the
    -- caller sets what it knows (see the reply). Appended to every row, they made the node decode
    -- two fields twice, and a workflow step's row of 30 values outgrow its table's 32 slots.
    local r = tRow[j]
    if v[10] then
      r[v[10]] = a
    else
      r[#r + 1], r[#r + 2] = 'a', a
    end
    if v[11] then
      r[v[11]] = fence
    else
      r[#r + 1], r[#r + 2] = 'f', fence
    end
    rows[#rows + 1] = r
    plain[#plain + 1] = id
    local g = byKind[k]
    if not g then
      g = {members = {}, ids = {}}
      byKind[k] = g
    end
    g.members[#g.members + 1] = tMember[j]
    g.ids[#g.ids + 1] = id
    if v[8] then wfRunAdd(wr, v[8], 'running') end
  end
  perKind[k] = (perKind[k] or 0) + 1
  ids[#ids + 1] = id
end
wfRunFlush(wr)
local function record(u, n)
  if u and u.rate > 0 and n > 0 then
    local seq = rcall('INCR', P .. 'rseq')
    rcall('ZADD', P .. 'rs:' .. u.scope .. ':' .. u.name, NOWS, fmt(seq) .. ':' .. fmt(n))
    rcall('HINCRBY', P .. 'rsum', u.scope .. ':' .. u.name, n)
  end
end
record(ql, nt)
for k, u in pairs(kls) do record(u, perKind[k] or 0) end
flushIndex()
if #plain > 0 then
  local byId, byLease = {}, {}
  for i, id in ipairs(plain) do
    byId[2 * i - 1], byId[2 * i] = id, id
    byLease[2 * i - 1], byLease[2 * i] = until_, id
  end
  variadic('ZREM', sqKey('available', queue), plain)
  variadic('ZADD', sqKey('running', queue), byId)
  variadic('ZADD', P .. 'run', byLease)
  variadic('SADD', P .. 'own:' .. owner, plain)
  for k, g in pairs(byKind) do
    variadic('ZREM', rkey(queue, k), g.members)
    variadic('SADD', P .. 'kr:' .. k, g.ids)
  end
end
finish()
-- The claim returns its jobs' rows. Handing a row through Lua costs Redis ~3 µs more than a
-- pipelined HGETALL of it after the call, but that second round trip is what a node's starts
-- wait for: at 100 workers a drain ran 7-13 % faster with the rows in the reply, and at 500,
-- where Redis' thread is the limit, 1 % slower (bench/peers, alternated runs).
-- Each row goes as one string (joinRow): a reply of thirty bulk strings per row cost the node
-- an allocation per field, which its garbage collector paid for in a drain, and Redis more to
-- write than the joining.
for i, r in ipairs(rows) do
  if not r then r = row(ids[i]) end
  rows[i] = joinRow(r, ids[i])
end
-- The reply is the claim's time and the rows. The state, owner, lease end and start every
-- claimed job now has are the same for all of them, and the caller knows them from its call and
-- that time: they are not repeated per row (Store.Claim sets them; ~1 µs a job through Lua).
-- A claim under a limit says so: only its writes must reach the replicas before it returns (see
-- Store.Claim).
if ql or next(kls) then return {'\0limited', {NOWS, rows}} end
return {NOWS, rows}
