-- prelude: shared by every script. The scripts are the functions of one library (FUNCTION
-- LOAD), so what the prelude defines is built once per load, not once per call: its closures and
-- constant tables cost ~10 µs a call when every call built them (EVAL). A call's state lives in
-- the locals declared first, and begin() sets every one of them at the start of each call; a
-- call that failed part-way may have left anything in them.
-- KEYS[1] is the namespace's meta hash (declared, so Cluster routes the call to its slot).
-- ARGV[1] is the key prefix "rota:{ns}:", ARGV[2] the time in microseconds ('' for the server's
-- TIME), ARGV[3] the schema version this build knows. A script's own arguments start at ARGV[4].
-- Numbers are never concatenated raw into keys or values: Lua numbers are doubles and tostring
-- rounds them to 14 digits, so every number written goes through fmt.
-- The functions of the standard library and Redis' API are read into locals at the first call
-- (a library's top level, run by FUNCTION LOAD, sees none of them): a function runs with an
-- empty globals table whose metatable falls back to the real globals, so each use of a global
-- name cost two table lookups and a metamethod, ~5 µs of an insert's call. globals() is defined
-- before the locals that take the names, so the names in it are still the globals.
local function globals()
  return redis.call, tonumber, ipairs, pairs, next, unpack, type, error, string, table, math, cjson
end
local rcall, tonumber, ipairs, pairs, next, unpack, type, error, string, table, math, cjson
local KEYS, ARGV, P, NOW, NOWS, SECS, DEFER, PARKED, RELW
local FINALS, DEPQ, RELEASED, NSK, RMEMBER, IXPEND, IXLAST, WFD, WFDROP, RELQ, EDGES = {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}
local COUNTED, COUNTORDER = {}, {}
-- NSK holds texts made from the namespace's prefix that calls repeat (keys, messages), kept
-- from call to call while they are for one namespace (NSKP), up to NSKMAX of them: a
-- concatenation costs Redis ~0.6 µs (a new string, hashed, later collected), a lookup a fifth of
-- that. begin() empties it for another namespace.
local NSKP, NSKN, NSKMAX = false, 0, 1000
-- nskText is a text of the namespace kept in NSK[group][a][b], made by make(a, b) on first use.
-- Its callers look it up themselves first: a call costs about as much as the lookup.
local function nskText(group, a, b, make)
  local g = NSK[group]
  local t = g[a]
  if not t then
    t = {}
    g[a] = t
  end
  local text = t[b]
  if not text then
    text = make(a, b)
    t[b] = text
    NSKN = NSKN + 1
  end
  return text
end
local function fmt(n) return string.format('%d', n) end
-- num is the text of a count (a non-negative integer) as a command's argument. Redis turns a Lua
-- number into an argument with snprintf's %.17g, ~3 times what fmt costs; the texts of counts up
-- to NUMMAX (the batch sizes and offsets a busy namespace repeats) are kept once made, for every
-- call and namespace: the library's state is marked by every collection of its Lua heap.
local NUMTEXT, NUMMAX = {}, 1024
local function num(n)
  local t = NUMTEXT[n]
  if not t then
    t = fmt(n)
    if n <= NUMMAX then NUMTEXT[n] = t end
  end
  return t
end
-- USECPAD pads TIME's microseconds (0-999999) to six digits.
local USECPAD = {'00000', '0000', '000', '00', '0', ''}
-- begin starts each call with the call's state tables empty. A table costs Redis ~1.5 µs to
-- make and collect, and most calls use few of the thirteen, so one left empty by the last call
-- is kept rather than made again. A lean call (a script that reads none of them, nor NOW: see
-- script.lean) leaves them as they are, for the next call that uses them empties them first,
-- and NOW false: thirteen checks and a conversion of the time are a tenth of a one-job insert.
local function begin(keys, args, lean)
  if not rcall then
    rcall, tonumber, ipairs, pairs, next, unpack, type, error, string, table, math, cjson = globals()
  end
  KEYS, ARGV, P = keys, args, args[1]
  -- The time's text is made by concatenation, not fmt: string.format and a tonumber each cost
  -- about as much as a small Redis command.
  -- SECS is the time's whole seconds, as text.
  if args[2] ~= '' then
    NOWS = args[2]
    SECS = string.sub(NOWS, 1, -7)
  else
    local t = rcall('TIME')
    NOWS, SECS = t[1] .. USECPAD[#t[2]] .. t[2], t[1]
  end
  if P ~= NSKP or NSKN > NSKMAX then NSK, NSKP, NSKN = {r = {}, sq = {}, pub = {}}, P, 0 end
  if lean then
    NOW = false
    return
  end
  NOW = tonumber(NOWS)
  if next(FINALS) then FINALS = {} end
  if next(DEPQ) then DEPQ = {} end
  if next(RELEASED) then RELEASED = {} end
  if next(RMEMBER) then RMEMBER = {} end
  if next(RELQ) then RELQ = {} end
  if next(IXPEND) then IXPEND = {} end
  if next(IXLAST) then IXLAST = {} end
  if next(WFD) then WFD = {} end
  if next(WFDROP) then WFDROP = {} end
  if next(EDGES) then EDGES = {} end
  if next(COUNTED) then COUNTED = {} end
  if next(COUNTORDER) then COUNTORDER = {} end
  DEFER, PARKED, RELW = false, false, false
end

local STATES = {'available', 'scheduled', 'pending', 'running', 'retryable', 'completed', 'cancelled', 'discarded', 'expired'}
local CLAIMABLE = {available = true, scheduled = true, retryable = true}
-- PICKED is where claim.lua puts each field it decides by, picked out of a job's hash (v[1..9]);
-- a constant of the library, built once per load rather than once per claim.
local PICKED = {s = 1, a = 2, f = 3, x = 4, u = 5, us = 6, sc = 7, W = 8, dp = 9}
local FINAL = {completed = true, cancelled = true, discarded = true, expired = true}
-- FINALS: ids that reached a final state, published by finish.
-- DEPQ holds the jobs that ended with dependents ({i = id, s = end state, or false when deleted;
-- dp, taken and gone as takeEdges reads them}),
-- RELEASED the queues their dependents became available in: finish() settles and announces them.
-- PARKED is set when finish() left some of them in the settling hash for the settle script.

local function fail(msg) error({err = 'ROTA ' .. msg}) end

-- checkMeta refuses a namespace that was never migrated or was flushed (ids would start again
-- at 1 over jobs that nodes still hold), and one written by a newer build.
local function checkMeta()
  local v = rcall('HGET', KEYS[1], 'version')
  if v == ARGV[3] then return end
  if not v then fail('NOTMIGRATED') end
  if tonumber(v) > tonumber(ARGV[3]) then fail('TOONEW ' .. v) end
  if tonumber(v) < tonumber(ARGV[3]) then fail('NOTMIGRATED ' .. v) end
end

-- idKey is the id counter. It is named by the schema version (ARGV[3]) so that in a namespace
-- of any other version, flushed, or never migrated it starts again at 1: newIds reads the meta
-- hash only then, not at every insert. Migrate renames the counter of the version it moves up
-- from (migrate.lua), so every version after this one must keep the name's form.
local function idKey()
  local key = NSK.id
  if not key then key = P .. 'id:' .. ARGV[3]; NSK.id = key end
  return key
end
local KINDS, KINDSN, KINDSMAX = {}, 0, 10000
local function forgetKinds() KINDS, KINDSN = {}, 0 end
-- newIds takes n ids and returns the first. A counter that starts at 1 is a new namespace, or
-- one refused by checkMeta: then it is removed again, so that the next insert asks once more.
-- (A namespace that lost its meta hash but kept its counter is written on: its ids go on from
-- where they were, and the nodes' identity check notices the loss.)
local function newIds(n)
  local k = idKey()
  local last = rcall('INCRBY', k, num(n))
  if last == n then
    forgetKinds()
    if rcall('HGET', KEYS[1], 'version') ~= ARGV[3] then
      rcall('DEL', k)
      checkMeta()
    end
  end
  return last - n + 1
end

local function jkey(id) return P .. 'j:' .. id end
-- rkey is a (queue, kind) ready set; the queue is length-prefixed so that no two pairs collide
-- (#q is a number, and turning it into a string costs ~0.7 µs, printf).
local function makeRkey(q, k) return P .. 'r:' .. #q .. ':' .. q .. ':' .. k end
local function rkey(q, k)
  local t = NSK.r[q]
  return t and t[k] or nskText('r', q, k, makeRkey)
end
-- sqKey is the index of queue q's jobs in state s.
local function makeSqKey(q, s) return P .. 'sq:' .. s .. ':' .. q end
local function sqKey(s, q)
  local t = NSK.sq[q]
  return t and t[s] or nskText('sq', q, s, makeSqKey)
end
-- RMEMBER holds ready-set members a script already read (claim's merge), keyed by job table, so
-- that none is built again from its job's fields.
-- member is a ready-set member: run_at (never below 0) and id (a decimal text), zero-padded to
-- 16 digits each, so that members of one priority sort by run_at, then id. Both are padded by
-- concatenation (string.format cost ~1 µs), and the run_at part is kept for the next job, which
-- nearly always has the same (inserted or released now).
-- (Written out: a library's top level, run by FUNCTION LOAD, cannot call string.rep.)
local ZEROS = {[0] = '', '0', '00', '000', '0000', '00000', '000000', '0000000', '00000000', '000000000', '0000000000', '00000000000', '000000000000', '0000000000000', '00000000000000', '000000000000000', '0000000000000000'}
local lastRunAt, lastRunAtPart
local function member(runAt, id)
  if runAt ~= lastRunAt then
    -- A run_at is an integer's decimal text (fmt's, or Go's): padded as it is, or zeros when
    -- it is negative.
    if string.byte(runAt) == 45 then
      lastRunAt, lastRunAtPart = runAt, ZEROS[16]
    else
      lastRunAt, lastRunAtPart = runAt, (ZEROS[16 - #runAt] or '') .. runAt
    end
  end
  return lastRunAtPart .. (ZEROS[16 - #id] or '') .. id
end
-- nextAttempt is the text of attempt a + 1, kept once formatted: attempts take few values, and
-- what it keeps is the same for every call and namespace.
local NEXTATTEMPT = {}
local function nextAttempt(a)
  local n = NEXTATTEMPT[a]
  if not n then
    n = fmt(tonumber(a) + 1)
    NEXTATTEMPT[a] = n
  end
  return n
end
local function rmember(h)
  return RMEMBER[h] or member(h.r, h.i)
end

-- load returns the job's fields as a table, and the HGETALL reply it read them from.
local function load(id)
  local flat = rcall('HGETALL', jkey(id))
  if #flat == 0 then return nil end
  local h = {}
  for i = 1, #flat, 2 do h[flat[i]] = flat[i + 1] end
  return h, flat
end

local function row(id) return rcall('HGETALL', jkey(id)) end
-- joinRow is a claimed row (a flat field list) of job id as one string: the list's length, the
-- id and the list, joined by NUL bytes (read by readClaimRow): a claim of 100 costs Redis 105
-- thousand instructions a job so, 112 with each row packed by cmsgpack.pack. With the length
-- the node tells a value holding a NUL, which splits the row into more parts, from a row
-- without, and reads such a job again (args are the caller's bytes): checking the values here
-- cost more than the packing saved. Each length's text is formatted once (NTEXT), as
-- NEXTATTEMPT's.
local NTEXT = {}
local function joinRow(r, id)
  local n = #r
  local t = NTEXT[n]
  if not t then
    t = fmt(n) .. '\0'
    NTEXT[n] = t
  end
  return t .. id .. '\0' .. table.concat(r, '\0')
end

-- hsetAll writes every field of table t to hash key.
local function hsetAll(key, t)
  local flat = {}
  for k, v in pairs(t) do
    flat[#flat + 1] = k
    flat[#flat + 1] = v
  end
  rcall('HSET', key, unpack(flat))
end

-- Index writes (ZADD, ZREM, SADD, SREM on the index keys) cost ~2 µs of bridge overhead per
-- redis.call on top of the command itself, and a transition makes 6-8 of them per job. Inside
-- deferIndex(), they are gathered per key and sent as one variadic call per key at flushIndex(),
-- so a batch of n jobs pays the overhead once per key rather than once per job.
-- A region that defers must not read an index key before it flushes (job hashes and uq are
-- written at once and may be read). Order per key is kept: a write joins the key's latest group
-- only if it is the same command, else it opens a new group, so runs of one command on one key
-- merge and nothing on a key is reordered (writes to different keys commute).
-- Deferring widens what a Lua runtime error (a bug: OOM is refused before a #!lua script starts)
-- would leave behind, hashes written with their index writes still pending, which is why the
-- regions are the write phases of claim, complete and insert only.
-- IXCHUNK is the most arguments one flushed call carries (even, for ZADD's score-member pairs),
-- well under Lua's unpack limit (LUAI_MAXCSTACK, 8000).
local IXCHUNK = 1000
local function ix(cmd, key, a, b)
  if not DEFER then
    if b then return rcall(cmd, key, a, b) end
    return rcall(cmd, key, a)
  end
  local g = IXLAST[key]
  if not g or g.cmd ~= cmd then
    g = {cmd = cmd, key = key, n = 0}
    IXPEND[#IXPEND + 1] = g
    IXLAST[key] = g
  end
  g.n = g.n + 1
  g[g.n] = a
  if b then
    g.n = g.n + 1
    g[g.n] = b
  end
end
-- variadic sends cmd on key with every element of list, in calls of at most IXCHUNK.
local function variadic(cmd, key, list)
  for i = 1, #list, IXCHUNK do
    rcall(cmd, key, unpack(list, i, math.min(i + IXCHUNK - 1, #list)))
  end
end
local function deferIndex() DEFER = true end
local function flushIndex()
  for _, g in ipairs(IXPEND) do
    for i = 1, g.n, IXCHUNK do
      rcall(g.cmd, g.key, unpack(g, i, math.min(i + IXCHUNK - 1, g.n)))
    end
  end
  IXPEND, IXLAST, DEFER = {}, {}, false
end

-- unindex takes a job out of every index of its current state.
local function unindex(h)
  local s, q, id = h.s, h.q, h.i
  ix('ZREM', sqKey(s, q), id)
  if s == 'available' then
    ix('ZREM', rkey(q, h.k), rmember(h))
  elseif s == 'scheduled' or s == 'retryable' then
    ix('ZREM', P .. 'w:' .. q, id)
  elseif s == 'running' then
    ix('ZREM', P .. 'run', id)
    if h.o then ix('SREM', P .. 'own:' .. h.o, id) end
    ix('SREM', P .. 'kr:' .. h.k, id)
  elseif s ~= 'pending' then
    ix('ZREM', P .. 'fin:' .. s, id)
  end
  if CLAIMABLE[s] and h.x then ix('ZREM', P .. 'x:' .. q, id) end
  if h.sc then ix('SREM', P .. 'sj:' .. h.sc, id) end
end

-- index puts a job into the indexes of its state.
local function index(h)
  local s, q, id = h.s, h.q, h.i
  ix('ZADD', sqKey(s, q), id, id)
  if s == 'available' then
    ix('ZADD', rkey(q, h.k), fmt(-tonumber(h.p)), rmember(h))
    -- A job indexed here is in q already, or inserted by a call that names q (insertJobs), so
    -- q is in the queues set and addKind's second call is not needed.
    ix('SADD', P .. 'kq:' .. q, h.k)
  elseif s == 'scheduled' or s == 'retryable' then
    ix('ZADD', P .. 'w:' .. q, h.r, id)
  elseif s == 'running' then
    ix('ZADD', P .. 'run', h.l, id)
    ix('SADD', P .. 'own:' .. h.o, id)
    ix('SADD', P .. 'kr:' .. h.k, id)
  elseif s ~= 'pending' then
    ix('ZADD', P .. 'fin:' .. s, h.z, id)
  end
  if CLAIMABLE[s] and h.x then ix('ZADD', P .. 'x:' .. q, h.x, id) end
  if h.sc and (s == 'scheduled' or (s == 'available' and not h.t)) then
    ix('SADD', P .. 'sj:' .. h.sc, id)
  end
end

-- save writes fields (false deletes one) to the job's hash and to h.
local function save(h, fields)
  local set, del = {}, {}
  for k, v in pairs(fields) do
    if v == false then
      h[k] = nil
      del[#del + 1] = k
    else
      h[k] = v
      set[#set + 1] = k
      set[#set + 1] = v
    end
  end
  if #set > 0 then rcall('HSET', jkey(h.i), unpack(set)) end
  if #del > 0 then rcall('HDEL', jkey(h.i), unpack(del)) end
end

-- wants reports whether a job in state s holds its unique key (s is in its unique states).
local function wants(h, s)
  return h.us ~= nil and string.find(h.us, ',' .. s .. ',', 1, true) ~= nil
end

-- settleKey keeps the uq hash exact as h moves to state `to`: an entry exists iff its holder's
-- state is in the holder's unique states. A job that would take a key another holds gives it
-- up instead (its unique states emptied), as a superseded running job does.
local function settleKey(h, to, fields)
  if not h.u then return end
  local holder = rcall('HGET', P .. 'uq', h.u)
  local w = wants(h, to)
  if w and holder ~= h.i then
    if holder then
      fields.us = false
    else
      rcall('HSET', P .. 'uq', h.u, h.i)
    end
  elseif not w and holder == h.i then
    rcall('HDEL', P .. 'uq', h.u)
  end
end

-- A workflow is wfs (its id, among all, in byte order), wf:<id> (its steps' ids, scored by id)
-- and wfc:<id> (its steps per state), kept by whatever adds, moves or drops a step (h.W). The
-- changes to the counts are gathered in WFD and written by finish(), once per workflow and
-- state: a release of many steps, or a claim of many, is not two writes per step.
-- wfDelta moves n steps (one when nil) of workflow w from one state to another.
local function wfDelta(w, from, to, n)
  n = n or 1
  local d = WFD[w]
  if not d then
    d = {}
    WFD[w] = d
  end
  if from then d[from] = (d[from] or 0) - n end
  if to then d[to] = (d[to] or 0) + n end
end
-- A wfRun counts consecutive moves of one workflow's steps between the same two states and
-- hands them to wfDelta at once: the steps a claim, a completion or a release moves together
-- nearly all belong to one workflow, and a wfDelta per step cost more than the counting.
local function wfRun(from)
  return {from = from, w = false, to = false, n = 0}
end
local function wfRunFlush(r)
  if r.w then wfDelta(r.w, r.from, r.to, r.n) end
  r.w, r.n = false, 0
end
local function wfRunAdd(r, w, to)
  if w ~= r.w or to ~= r.to then
    wfRunFlush(r)
    r.w, r.to = w, to
  end
  r.n = r.n + 1
end
-- flushWorkflows writes the gathered counts, and forgets the workflows whose last step went.
local function flushWorkflows()
  for w, d in pairs(WFD) do
    for s, n in pairs(d) do
      if n ~= 0 then rcall('HINCRBY', P .. 'wfc:' .. w, s, fmt(n)) end
    end
  end
  for w in pairs(WFDROP) do
    if rcall('ZCARD', P .. 'wf:' .. w) == 0 then
      rcall('DEL', P .. 'wfc:' .. w)
      rcall('ZREM', P .. 'wfs', w)
    end
  end
  WFD, WFDROP = {}, {}
end

-- relKey is the hash of job d's release entries (see relEntry).
local function relKey(d) return P .. 'rel:' .. d end
-- forgetEntries takes pending job x's release entries out of the hashes of its dependencies
-- (deps, its D; waits, its dn): a direct entry vouches that x still waits, so x takes its entries
-- along when it leaves pending other than by the release they are for (a cancel, a retry, a
-- delete, a join of a second dependency). Only a job that waits for one (no dn) can have a
-- direct entry, so one with a count has nothing to forget.
local function forgetEntries(x, deps, waits)
  if not deps or waits then return end
  for d in string.gmatch(deps, '[^,]+') do rcall('HDEL', relKey(d), x) end
end

-- move is the one place a job changes state: indexes, unique key, workflow counts and fields in
-- step. A job that ends with dependents (dp) is queued for finish() to settle them.
local function move(h, to, fields)
  unindex(h)
  if h.W then wfDelta(h.W, h.s, to) end
  if h.s == 'pending' then
    fields.dn = false
    forgetEntries(h.i, h.D, h.dn)
  end
  -- A job run again ends again: what is left of its last end is settled by the next one.
  if h.dp and FINAL[h.s] and not FINAL[to] then rcall('HDEL', P .. 'settling', h.i) end
  fields.s = to
  settleKey(h, to, fields)
  save(h, fields)
  index(h)
  if FINAL[to] then
    FINALS[#FINALS + 1] = h.i
    if h.dp then DEPQ[#DEPQ + 1] = {i = h.i, s = to, dp = h.dp} end
  end
end

-- drop deletes a job that is not running, with its index entries, the key it holds and its
-- place in its workflow; the dependents still waiting for it are cancelled by finish(). (Those
-- of a job that ended were settled then, unless RetryWorkflow made them wait for it again, or
-- are still parked: they are settled by the end it had, not as a delete.)
local function drop(h)
  unindex(h)
  if h.s == 'pending' then forgetEntries(h.i, h.D, h.dn) end
  if h.u and rcall('HGET', P .. 'uq', h.u) == h.i then rcall('HDEL', P .. 'uq', h.u) end
  rcall('DEL', jkey(h.i))
  if h.dp then
    local st = false
    if FINAL[h.s] then
      local parked = rcall('HGET', P .. 'settling', h.i)
      if parked then
        rcall('HDEL', P .. 'settling', h.i)
        st = parked ~= '' and parked
      end
    end
    DEPQ[#DEPQ + 1] = {i = h.i, s = st, dp = h.dp, gone = true}
  end
  if h.W then
    wfDelta(h.W, h.s, nil)
    rcall('ZREM', P .. 'wf:' .. h.W, h.i)
    WFDROP[h.W] = true
  end
end

-- errLine is one attempt error as a JSON line (attempt nil for a job never claimed: 0); text and
-- trace come JSON-encoded from Go. An error that ends an attempt gives the claim's owner and
-- start (µs), for its node ("n") and running time ("d", µs); others give neither.
local function errLine(attempt, at, text, trace, owner, started)
  local l = '{"a":' .. (attempt or '0') .. ',"t":' .. at .. ',"e":' .. text
  if trace ~= '' then l = l .. ',"r":' .. trace end
  if owner then l = l .. ',"n":' .. cjson.encode(owner) end
  if started then l = l .. ',"d":' .. fmt(NOW - tonumber(started)) end
  return l .. '}\n'
end

-- fill puts v in place of the first mark in a JSON text from Go.
local function fill(text, mark, v)
  local i, j = string.find(text, mark, 1, true)
  if not i then return text end
  return string.sub(text, 1, i - 1) .. v .. string.sub(text, j + 1)
end

-- depError is the error (a JSON string) of a dependent cancelled because dependency dep ended
-- in state st, or was deleted (st false): DEPTEXT or DEPDELTEXT (store.DependencyError,
-- DependencyDeletedError, declared before the prelude by the Go code that builds the library),
-- with \u0001 marking the id and \u0002 the state in the texts.
local function depError(dep, st)
  if not st then return fill(DEPDELTEXT, '\\u0001', dep) end
  return fill(fill(DEPTEXT, '\\u0001', dep), '\\u0002', st)
end

-- due says whether run_at r (µs) has come. Both texts are integers without a sign, so of two
-- of the same length the later one sorts after: the comparison of texts spares a conversion
-- (~1 µs, strtod) per released job, which a fan-out pays ten thousand times.
local function due(r)
  if #r == #NOWS then return r <= NOWS end
  return tonumber(r) <= NOW
end

-- release makes a pending job whose dependencies are all done runnable: available from now, or
-- scheduled when its run_at is still ahead.
local function release(h)
  if tonumber(h.r) > NOW then
    move(h, 'scheduled', {})
  else
    move(h, 'available', {r = NOWS})
    RELEASED[h.q] = true
  end
end

-- A dependent is read, when its dependencies end, with the fields enough to count it off and
-- to release it when it is plain (releasePlain), as the positions of one HMGET: a table per
-- dependent cost more than the rest of a fan-out's release. One to cancel, or to release with
-- a unique key, expiry or schedule, is read whole (load): a fan-in's step, whose list of
-- dependencies holds thousands of ids, is counted off without reading it.
-- Whether it ignores failed dependencies is read only when one failed (few do).
local D_STATE, D_QUEUE, D_KIND, D_PRIORITY, D_RUNAT, D_UNIQUE, D_EXPIRES, D_SCHEDULE, D_WORKFLOW, D_WAITS =
  1, 2, 3, 4, 5, 6, 7, 8, 9, 10
-- loadDep reads them from job hash jk.
local function loadDep(jk)
  return rcall('HMGET', jk, 's', 'q', 'k', 'p', 'r', 'u', 'x', 'sc', 'W', 'dn')
end

-- addReady appends a job's score (its priority negated: the highest comes first) and member to
-- ready[k], the list of score-member pairs a variadic ZADD sends to the ready set of kind k.
-- NEGP keeps each priority's score text once formatted: like NEXTATTEMPT, it is the same for
-- every call and namespace.
local NEGP = {}
local function negPriority(p)
  local np = NEGP[p]
  if not np then
    np = fmt(-tonumber(p))
    NEGP[p] = np
  end
  return np
end
local function addReady(ready, k, p, runAt, id)
  local np = negPriority(p)
  local l = ready[k]
  if not l then
    l = {}
    ready[k] = l
  end
  l[#l + 1], l[#l + 2] = np, member(runAt, id)
end
-- addKind names k in kq:<q>, the kinds of q that have had jobs: QueueStats finds q's oldest
-- available job at the heads of their ready sets (stats.lua), so no index of available jobs by
-- age is kept beside them (a ZADD at every insert and release and a ZREM at every claim). A
-- queue whose kq:<q> is not empty is in the queues set (prune forgets both together), so q is
-- added there only when k is new to it: an insert of a kind the queue knows makes one call, not
-- two.
local function addKind(q, k)
  if rcall('SADD', P .. 'kq:' .. q, k) == 1 then rcall('SADD', P .. 'queues', q) end
end
-- addKindOnce is addKind for the Store whose inserts carry origin, for the ready set rk of (q, k):
-- the library remembers the second in which that Store last named the kind (KINDS), and its
-- inserts of the kind within that second make no call for it. Per Store, not per namespace: one
-- library serves every database of its server, and stores on two databases may share a
-- namespace's name. Only prune and migrate take names out, and a namespace flushed or deleted
-- starts its id counter again: all three forget what the library remembers (forgetKinds), as a
-- restart or a new load of the library does. What takes a name out on another server (a prune
-- on the primary while this one was a replica, which kept its library's state through a
-- partial resync) is seen within a second: a failover and back take longer.
local function addKindOnce(origin, q, k, rk)
  local t = KINDS[origin]
  if t and t[rk] == SECS then return end
  addKind(q, k)
  if KINDSN >= KINDSMAX then
    forgetKinds()
    t = nil
  end
  if not t then
    t = {}
    KINDS[origin] = t
  end
  if not t[rk] then KINDSN = KINDSN + 1 end
  t[rk] = SECS
end
-- addReadyList adds a list of score-member pairs to the ready set of (q, k) in one variadic ZADD
-- and names k for q; flushReady sends the lists addReady gathered for queue q, one per kind.
local function addReadyList(q, k, l)
  variadic('ZADD', rkey(q, k), l)
  addKind(q, k)
end
local function flushReady(q, ready)
  for k, l in pairs(ready) do addReadyList(q, k, l) end
end

-- releasePlain releases pending job id (hash jk; queue q, kind k, priority p, workflow w or
-- false) without unique key, expiry or schedule whose run_at has come: what release() and
-- move() write for it, with the index writes gathered per key in RELQ and sent by
-- flushReleased, one variadic call per key. A fan-out releases thousands of such steps in one
-- script, and move()'s generic tables and key strings were most of its cost.
-- A released job is not moved again in the same script, so no other write to its members waits.
local function releasePlain(id, jk, q, k, p, w)
  local g = RELQ[q]
  if not g then
    g = {ids = {}, byId = {}, ready = {}}
    RELQ[q] = g
  end
  local n = #g.byId
  g.ids[#g.ids + 1] = id
  g.byId[n + 1], g.byId[n + 2] = id, id
  addReady(g.ready, k, p, NOWS, id)
  -- dn is read only while a job is pending: it stays, which costs less than deleting it.
  rcall('HSET', jk, 's', 'available', 'r', NOWS)
  if w then
    if not RELW then RELW = wfRun('pending') end
    wfRunAdd(RELW, w, 'available')
  end
  RELEASED[q] = true
end
local function flushReleased()
  if RELW then wfRunFlush(RELW) end
  for q, g in pairs(RELQ) do
    variadic('ZREM', sqKey('pending', q), g.ids)
    variadic('ZADD', sqKey('available', q), g.byId)
    flushReady(q, g.ready)
  end
  RELQ = {}
end

-- A job's dependents are its edges: while it has one and never had more, that dependent's id in
-- its dp field, '=' before it (a fan-in's steps each have one, and taking it out of the hash it
-- is read with costs less than a set of one: SPOP was a fifth of a step's completion); with
-- more, the set dep:<id>, and dp '1'. An edge is taken out as it is counted, however the
-- settling is split: the set's by SPOP, the inline one by writing dp '1' (the set, empty); dp
-- is never removed, so a later end finds no edge left.
-- inlineEdge is the dependent a dp value names, or nil when it is the set's flag.
local function inlineEdge(dp)
  if string.byte(dp) == 61 then return string.sub(dp, 2) end
end
-- edgesOf is job d's dp (false when it has none), as this call last wrote or read it (EDGES).
local function edgesOf(d)
  local dp = EDGES[d]
  if dp == nil then dp = rcall('HGET', jkey(d), 'dp') or false end
  return dp
end
-- setEdges writes job d's dp.
local function setEdges(d, dp)
  rcall('HSET', jkey(d), 'dp', dp)
  EDGES[d] = dp
end
-- An edge kept in a set may come with what releasing its dependent takes beside the
-- dependent's state: its queue, kind, priority and workflow, which no script changes after the
-- insert, as one text in the hash rel:<d> under the dependent's id (relEntry). A fan-out's
-- release then reads three fields of each step's hash, not ten: that read was a third of what
-- a step's release cost Redis. Only a dependent without unique key, expiry or schedule gets one
-- (an expiry is only ever cleared later); an edge without one, kept inline or written before
-- entries were, is released from the dependent's own fields. An entry goes with its edge:
-- taken together (takeEdges), dropped together (dropEdge).
-- An entry is direct when its dependent waits for d alone and was due at its insert (a fan-out's
-- steps): while the entry exists the dependent is pending (forgetEntries), so d's completion
-- releases it from the entry alone, without reading the dependent's hash or counting it off
-- (settleDeps): that read and count were a third of what a step's release cost.
-- relEntry is new job h's entry, or nil when it gets none; direct says h waits for one job and
-- is due. The fields are joined by \0, which the names may not hold (checked) and the
-- workflow, last, may; a direct entry starts with one more.
local function relEntry(h, direct)
  -- (An empty queue would make an entry that is not direct start as a direct one does.)
  if h.u or h.x or h.sc or h.q == '' then return nil end
  if string.find(h.q, '\0', 1, true) or string.find(h.k, '\0', 1, true) then return nil end
  return (direct and '\0' or '') .. h.q .. '\0' .. h.k .. '\0' .. h.p .. '\0' .. (h.W or '')
end
-- relFields is entry e's fields (queue, kind, priority, workflow or false, whether direct),
-- parsed once per settling (parsed): a fan-out's entries are all one text. The table is the
-- call's: workflow ids make the texts many over time.
local function relFields(parsed, e)
  local f = parsed[e]
  if not f then
    local direct = string.byte(e) == 0
    local from = direct and 2 or 1
    local a = string.find(e, '\0', from, true)
    local b = string.find(e, '\0', a + 1, true)
    local c = string.find(e, '\0', b + 1, true)
    local w = string.sub(e, c + 1)
    f = {string.sub(e, from, a - 1), string.sub(e, a + 1, b - 1), string.sub(e, b + 1, c - 1),
      w ~= '' and w, direct}
    parsed[e] = f
  end
  return f
end

-- addEdge makes job x a dependent of job d; info is x's release entry, if it has one.
local function addEdge(d, x, info)
  local dp = edgesOf(d)
  if not dp then
    setEdges(d, '=' .. x)
    return
  end
  local one = inlineEdge(dp)
  if one then
    rcall('SADD', P .. 'dep:' .. d, one, x)
    setEdges(d, '1')
  else
    rcall('SADD', P .. 'dep:' .. d, x)
  end
  if info then ix('HSET', relKey(d), x, info) end
end
-- dropEdge takes job x out of job d's dependents, if an edge is left there: one whose end is
-- parked, or kept in a set whose job was dropped. RetryWorkflow runs x again without waiting
-- for d, which a parked end would otherwise count x off for.
local function dropEdge(d, x)
  if edgesOf(d) == '=' .. x then
    setEdges(d, '1')
  else
    rcall('SREM', P .. 'dep:' .. d, x)
    rcall('HDEL', relKey(d), x)
  end
end

-- park leaves the rest of an end's dependents to the settle script: the end is kept in the
-- settling hash (id -> end state, '' for a delete), its dependents not yet settled stay in its
-- dep set or dp.
local function park(e)
  rcall('HSET', P .. 'settling', e.i, e.s or '')
  PARKED = true
end

-- takeEdges takes out of end e's edges at most budget dependents and returns them, with their
-- release entries when they came from a set (false where one has none), parking the end when
-- some are left. e.dp is its dp when the caller read it (nil: read here, as for a
-- parked end); e.taken says the caller already took its inline edge (complete's own write), and
-- e.gone that its hash was deleted with it.
local function takeEdges(e, budget)
  local dp = e.dp
  if dp == nil then dp = rcall('HGET', jkey(e.i), 'dp') or '1' end
  local one = inlineEdge(dp)
  if one then
    -- Taken by the caller, or in a hash just deleted (nothing would keep it for later), it is
    -- settled now, whatever the budget: at most one dependent per job the call ended or dropped.
    if e.gone then
      EDGES[e.i] = nil
    elseif e.taken then
      EDGES[e.i] = '1'
    elseif budget > 0 then
      setEdges(e.i, '1')
    else
      park(e)
      return {}
    end
    return {one}
  end
  if budget <= 0 then
    park(e)
    return {}
  end
  local key = P .. 'dep:' .. e.i
  local ids = rcall('SPOP', key, num(budget))
  if #ids == 0 then return ids end
  local rk, rels, found = relKey(e.i), {}, false
  local left = #ids == budget and rcall('EXISTS', key) == 1
  for i = 1, #ids, IXCHUNK do
    local j = math.min(i + IXCHUNK - 1, #ids)
    local part = rcall('HMGET', rk, unpack(ids, i, j))
    for n = 1, #part do
      rels[i + n - 1] = part[n]
      found = found or part[n]
    end
    if left and found then rcall('HDEL', rk, unpack(ids, i, j)) end
  end
  -- The set is empty when nothing is left: the hash holds no entry but those just taken.
  if left then
    park(e)
  elseif found then
    rcall('DEL', rk)
  end
  return ids, rels
end

-- tally adds one to x's count, listing x in order the first time.
local function tally(count, order, x)
  local c = count[x]
  if not c then
    c = 0
    order[#order + 1] = x
  end
  count[x] = c + 1
end
-- countOff counts dependent x off once for a completion whose edge to it the caller took: a
-- fan-in's steps, thousands per call, count their one dependent off without a DEPQ entry each.
local function countOff(x) tally(COUNTED, COUNTORDER, x) end

-- settleDeps resolves the dependents of every job in DEPQ, and those countOff counted:
-- completions (or any ends, for a dependent that ignores failed dependencies) take as many off
-- what it waits for and release it at zero, and so does a delete for such a dependent, for
-- which the job has ended; any other end, or a delete, cancels it, which queues its own
-- dependents in turn.
-- The queue is walked in rounds, not recursed, so a chain of any length settles without a
-- recursion. One script settles at most ARGV[#ARGV] dependents, so that a fan-out of ten
-- thousand steps does not hold Redis for the whole of its release: the rest is parked (park)
-- and the Store runs the settle script until none is left, other clients' commands running
-- between. Each edge is taken out as it is counted (takeEdges), so a dependent is counted off
-- once per dependency however the settling is split.
-- A round gathers the edges of the ends queued so far per dependent, so that a fan-in's step,
-- which a batch of completions all counted off, is read and written once per round; a count
-- that stays above zero is all that is written. The flag dp stays (a later end finds the set
-- empty), and the index writes of a fan-out's release go out together: this reads no index.
local function settleDeps()
  if #DEPQ == 0 and #COUNTORDER == 0 then return end
  local own = not DEFER
  if own then deferIndex() end
  local budget = tonumber(ARGV[#ARGV])
  local n = 1
  -- Per dependent: how many of its edges ended, and the first end that failed (a sparse
  -- table: few dependents have one). The first round starts from what countOff counted; its
  -- edges were taken whatever the budget, as takeEdges takes an inline one.
  local order, count, failed, rel, parsed = COUNTORDER, COUNTED, {}, {}, {}
  for _, id in ipairs(order) do budget = budget - count[id] end
  COUNTED, COUNTORDER = {}, {}
  while n <= #DEPQ or #order > 0 do
    local last = #DEPQ
    while n <= last do
      local e = DEPQ[n]
      n = n + 1
      local ids, rels = takeEdges(e, budget)
      budget = budget - #ids
      local ok = e.s == 'completed'
      for i, id in ipairs(ids) do
        local r = rels and rels[i]
        local x = r and ok and relFields(parsed, r)
        if x and x[5] then
          -- A direct entry's dependent is pending, due and waits for this job alone.
          releasePlain(id, jkey(id), x[1], x[2], x[3], x[4])
        else
          tally(count, order, id)
          if r then rel[id] = r end
          if not ok and not failed[id] then failed[id] = e end
        end
      end
    end
    for _, id in ipairs(order) do
      local c, f, e = count[id], failed[id], rel[id]
      local jk = jkey(id)
      -- With an entry, the state, run_at and count of the dependent's own fields (a join may
      -- have given it another wait, a retry a new run_at) and the rest from the entry.
      local v, runAt, waits
      if e then
        v = rcall('HMGET', jk, 's', 'r', 'dn')
        runAt, waits = v[2], v[3]
      else
        v = loadDep(jk)
        runAt, waits = v[D_RUNAT], v[D_WAITS]
      end
      if v[D_STATE] == 'pending' then
        if f and not rcall('HGET', jk, 'ig') then
          local h = load(id)
          move(h, 'cancelled', {z = NOWS, E = (h.E or '') .. errLine(h.a, NOWS, depError(f.i, f.s), '')})
        elseif waits and tonumber(waits) > c then
          rcall('HINCRBY', jk, 'dn', -c)
        elseif e and due(runAt) then
          local x = relFields(parsed, e)
          releasePlain(id, jk, x[1], x[2], x[3], x[4])
        elseif not e and not (v[D_UNIQUE] or v[D_EXPIRES] or v[D_SCHEDULE]) and due(runAt) then
          releasePlain(id, jk, v[D_QUEUE], v[D_KIND], v[D_PRIORITY], v[D_WORKFLOW])
        else
          release(load(id))
        end
      end
    end
    order, count, failed, rel = {}, {}, {}, {}
  end
  DEPQ = {}
  flushReleased()
  if own then flushIndex() end
end

-- finish ends every script that may end, move or drop jobs: it settles their dependents,
-- writes their workflows' counts, then announces the jobs that reached a final state and the
-- queues that were given jobs.
local function finish()
  settleDeps()
  flushWorkflows()
  local i = 1
  while i <= #FINALS do
    local j = math.min(i + 299, #FINALS)
    rcall('PUBLISH', P .. 'ev', 'f ' .. table.concat(FINALS, ',', i, j))
    i = j + 1
  end
  for q in pairs(RELEASED) do rcall('PUBLISH', P .. 'ev', 'i ' .. q) end
  RELEASED = {}
end

-- readLimit is limit (scope, name) as the lim hash holds it ("max,rate,period_µs"), with what
-- counts against it now: {scope, name, spec, max, rate, period, running, started}, or nil when
-- there is none. Its starts are those of its window; with forget (a claim, which counts them
-- to add its own) the ones that left it are removed too, and the sum kept beside them (rsum)
-- moved down with them; a read without it writes nothing.
local function readLimit(scope, name, forget)
  local spec = rcall('HGET', P .. 'lim', scope .. ':' .. name)
  if not spec then return nil end
  local mx, rate, per = string.match(spec, '^(%d+),(%d+),(%d+)$')
  local u = {scope = scope, name = name, spec = spec, max = tonumber(mx), rate = tonumber(rate),
    period = tonumber(per), running = 0, started = 0}
  if u.max > 0 then
    if scope == 'queue' then
      u.running = rcall('ZCARD', sqKey('running', name))
    else
      u.running = rcall('SCARD', P .. 'kr:' .. name)
    end
  end
  if u.rate > 0 then
    local key, edge = P .. 'rs:' .. scope .. ':' .. name, fmt(NOW - u.period)
    if not forget then
      for _, m in ipairs(rcall('ZRANGE', key, '(' .. edge, '+inf', 'BYSCORE')) do
        u.started = u.started + tonumber(string.match(m, ':(%d+)$'))
      end
      return u
    end
    local gone = 0
    local old = rcall('ZRANGE', key, '-inf', edge, 'BYSCORE')
    for _, m in ipairs(old) do gone = gone + tonumber(string.match(m, ':(%d+)$')) end
    if #old > 0 then
      rcall('ZREMRANGEBYSCORE', key, '-inf', edge)
      rcall('HINCRBY', P .. 'rsum', scope .. ':' .. name, -gone)
    end
    u.started = tonumber(rcall('HGET', P .. 'rsum', scope .. ':' .. name) or '0')
  end
  return u
end

-- PARKEDMARK heads the reply of a script whose finish() parked dependents: {PARKEDMARK, reply}
-- (see parkedReply), which the Store reads as its call's reply and a settling left to do.
local PARKEDMARK = '\0parked'
local function parkedReply(r)
  if PARKED then return {PARKEDMARK, r} end
  return r
end
