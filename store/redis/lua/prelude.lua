-- prelude: shared by every script, placed after its #!lua line.
-- KEYS[1] is the namespace's meta hash (declared, so Cluster routes the script to its slot).
-- ARGV[1] is the key prefix "rota:{ns}:", ARGV[2] the time in microseconds ('' for the server's
-- TIME), ARGV[3] the schema version this build knows. A script's own arguments start at ARGV[4].
-- Numbers are never concatenated raw into keys or values: Lua numbers are doubles and tostring
-- rounds them to 14 digits, so every number written goes through fmt.
local P = ARGV[1]
local NOW
if ARGV[2] ~= '' then
  NOW = tonumber(ARGV[2])
else
  local t = redis.call('TIME')
  NOW = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function fmt(n) return string.format('%d', n) end
local NOWS = fmt(NOW)

local STATES = {'available', 'scheduled', 'running', 'retryable', 'completed', 'cancelled', 'discarded', 'expired'}
local CLAIMABLE = {available = true, scheduled = true, retryable = true}
local FINAL = {completed = true, cancelled = true, discarded = true, expired = true}
local FINALS = {} -- ids that reached a final state, published by publishFinals

local function fail(msg) error({err = 'ROTA ' .. msg}) end

-- checkMeta refuses a namespace that was never migrated or was flushed (ids would start again
-- at 1 over jobs that nodes still hold), and one written by a newer build.
local function checkMeta()
  local v = redis.call('HGET', KEYS[1], 'version')
  if not v then fail('NOTMIGRATED') end
  if tonumber(v) > tonumber(ARGV[3]) then fail('TOONEW ' .. v) end
  if tonumber(v) < tonumber(ARGV[3]) then fail('NOTMIGRATED ' .. v) end
end

local function jkey(id) return P .. 'j:' .. id end
-- rkey is a (queue, kind) ready set; the queue is length-prefixed so that no two pairs collide.
-- The queue's part is kept per script: #q is a number, and turning it into a string costs ~0.7 µs
-- (printf), once per job otherwise.
local RKQ = {}
local function rkey(q, k)
  local pre = RKQ[q]
  if not pre then
    pre = P .. 'r:' .. #q .. ':' .. q .. ':'
    RKQ[q] = pre
  end
  return pre .. k
end
-- RMEMBER holds ready-set members a script already read (claim's merge), keyed by job table:
-- string.format costs ~1 µs here, once per claimed job.
local RMEMBER = {}
-- member is a ready-set member: run_at (never below 0) and id, zero-padded, so that members of
-- one priority sort by run_at, then id.
local function member(runAt, id)
  local r = tonumber(runAt)
  if r < 0 then r = 0 end
  return string.format('%016d%016d', r, tonumber(id))
end
local function rmember(h)
  return RMEMBER[h] or member(h.r, h.i)
end

-- load returns the job's fields as a table, and the HGETALL reply it read them from.
local function load(id)
  local flat = redis.call('HGETALL', jkey(id))
  if #flat == 0 then return nil end
  local h = {}
  for i = 1, #flat, 2 do h[flat[i]] = flat[i + 1] end
  return h, flat
end

local function row(id) return redis.call('HGETALL', jkey(id)) end

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
local DEFER = false
local IXPEND, IXLAST = {}, {}
-- IXCHUNK is the most arguments one flushed call carries (even, for ZADD's score-member pairs),
-- well under Lua's unpack limit (LUAI_MAXCSTACK, 8000).
local IXCHUNK = 1000
local function ix(cmd, key, a, b)
  if not DEFER then
    if b then return redis.call(cmd, key, a, b) end
    return redis.call(cmd, key, a)
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
    redis.call(cmd, key, unpack(list, i, math.min(i + IXCHUNK - 1, #list)))
  end
end
local function deferIndex() DEFER = true end
local function flushIndex()
  for _, g in ipairs(IXPEND) do
    for i = 1, g.n, IXCHUNK do
      redis.call(g.cmd, g.key, unpack(g, i, math.min(i + IXCHUNK - 1, g.n)))
    end
  end
  IXPEND, IXLAST, DEFER = {}, {}, false
end

-- unindex takes a job out of every index of its current state.
local function unindex(h)
  local s, q, id = h.s, h.q, h.i
  ix('ZREM', P .. 'sq:' .. s .. ':' .. q, id)
  if s == 'available' then
    ix('ZREM', rkey(q, h.k), rmember(h))
    ix('ZREM', P .. 'avt:' .. q, id)
  elseif s == 'scheduled' or s == 'retryable' then
    ix('ZREM', P .. 'w:' .. q, id)
  elseif s == 'running' then
    ix('ZREM', P .. 'run', id)
    if h.o then ix('SREM', P .. 'own:' .. h.o, id) end
    ix('SREM', P .. 'kr:' .. h.k, id)
  else
    ix('ZREM', P .. 'fin:' .. s, id)
  end
  if CLAIMABLE[s] and h.x then ix('ZREM', P .. 'x:' .. q, id) end
  if h.sc then ix('SREM', P .. 'sj:' .. h.sc, id) end
end

-- index puts a job into the indexes of its state.
local function index(h)
  local s, q, id = h.s, h.q, h.i
  ix('ZADD', P .. 'sq:' .. s .. ':' .. q, id, id)
  if s == 'available' then
    ix('ZADD', rkey(q, h.k), fmt(-tonumber(h.p)), rmember(h))
    ix('ZADD', P .. 'avt:' .. q, h.r, id)
  elseif s == 'scheduled' or s == 'retryable' then
    ix('ZADD', P .. 'w:' .. q, h.r, id)
  elseif s == 'running' then
    ix('ZADD', P .. 'run', h.l, id)
    ix('SADD', P .. 'own:' .. h.o, id)
    ix('SADD', P .. 'kr:' .. h.k, id)
  else
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
  if #set > 0 then redis.call('HSET', jkey(h.i), unpack(set)) end
  if #del > 0 then redis.call('HDEL', jkey(h.i), unpack(del)) end
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
  local holder = redis.call('HGET', P .. 'uq', h.u)
  local w = wants(h, to)
  if w and holder ~= h.i then
    if holder then
      fields.us = false
    else
      redis.call('HSET', P .. 'uq', h.u, h.i)
    end
  elseif not w and holder == h.i then
    redis.call('HDEL', P .. 'uq', h.u)
  end
end

-- move is the one place a job changes state: indexes, unique key and fields in step.
local function move(h, to, fields)
  unindex(h)
  fields.s = to
  settleKey(h, to, fields)
  save(h, fields)
  index(h)
  if FINAL[to] then FINALS[#FINALS + 1] = h.i end
end

-- drop deletes a job that is not running, with its index entries and the key it holds.
local function drop(h)
  unindex(h)
  if h.u and redis.call('HGET', P .. 'uq', h.u) == h.i then redis.call('HDEL', P .. 'uq', h.u) end
  redis.call('DEL', jkey(h.i))
end

-- errLine is one attempt error as a JSON line; text and trace come JSON-encoded from Go.
local function errLine(attempt, at, text, trace)
  local l = '{"a":' .. attempt .. ',"t":' .. at .. ',"e":' .. text
  if trace ~= '' then l = l .. ',"r":' .. trace end
  return l .. '}\n'
end

local function publishFinals()
  local i = 1
  while i <= #FINALS do
    local j = math.min(i + 299, #FINALS)
    redis.call('PUBLISH', P .. 'ev', 'f ' .. table.concat(FINALS, ',', i, j))
    i = j + 1
  end
end
