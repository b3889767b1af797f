-- complete: ARGV[4] n, [5] the state of a bare completion, [6] what a cancel request makes of
-- it (both final), then records of n outcomes in all: 'c', id, fence for a bare completion (no
-- error, result, refund or run_at); 'g', m, queue, kind, workflow ('' for none), owner, then m
-- pairs of id and fence, for m bare completions of plain jobs (no unique key, no schedule) whose
-- claims left those fields (the Store's hints, hints.go); or 'o' and 11 fields: id, fence, state,
-- the state when a cancel was requested (store.CancelRequestedState), run_at ('' keeps, 'now',
-- or µs), refund ('1'), error text and trace (JSON strings, '' for none), error time ('' for
-- now), has result ('1'), result. An outcome applies only to a running job with its fence;
-- outcomes apply in order.
checkMeta()
local n = tonumber(ARGV[4])
local bareState, bareCancel = ARGV[5], ARGV[6]
local applied = {}
-- Plain outcomes (a job with no unique key or schedule reaching a final state, nearly all of
-- them) write exactly what move() would, without its generic tables, and their index writes go
-- out as one variadic call per key after the loop: in this Lua the tables and per-job calls
-- cost more than the writes. The rest go through move().
local plain = {}      -- ids leaving the running set
local runQ, own, kr = {}, {}, {} -- per queue, owner and kind: ids leaving its running index
local finQ, fin = {}, {} -- per final state (and queue): score-member pairs to add
local function group(t, k)
  local g = t[k]
  if not g then
    g = {}
    t[k] = g
  end
  return g
end
-- The groups the last plain outcome went to, by its queue and state, owner and kind: a batch's
-- outcomes nearly all share them, and looking them up again per job cost more than adding to them.
local cq, cto, co, ck, gRun, gFinQ, gFin, gOwn, gKr
local wr = wfRun('running')
-- endPlain ends plain job id (hash jk) in the final state set[2], writing set (its state, end
-- time and whatever else the outcome brings), from queue q, kind k, owner o (false when none),
-- workflow w (false when none), with dependents dp (false when none).
local function endPlain(id, jk, set, q, k, o, w, dp)
  local to = set[2]
  if dp then
    -- Its one dependent's edge is taken in this write (see takeEdges); a completion counts
    -- that dependent off directly (countOff), the rest go through the queue.
    local one = inlineEdge(dp)
    if one then
      set[#set + 1] = 'dp'
      set[#set + 1] = '1'
    end
    if one and to == 'completed' then
      countOff(one)
    else
      DEPQ[#DEPQ + 1] = {i = id, s = to, dp = dp, taken = one ~= nil}
    end
  end
  rcall('HSET', jk, unpack(set))
  -- Deleted, not emptied in the HSET: that saved ~0.7 µs of Redis per job but kept 30
  -- bytes more in every completed job, which retention multiplies.
  rcall('HDEL', jk, 'o', 'l')
  if q ~= cq or to ~= cto then
    cq, cto = q, to
    gRun, gFinQ, gFin = group(runQ, q), group(group(finQ, to), q), group(fin, to)
  end
  if o ~= co then co, gOwn = o, o and group(own, o) end
  if k ~= ck then ck, gKr = k, group(kr, k) end
  plain[#plain + 1] = id
  gRun[#gRun + 1] = id
  if gOwn then gOwn[#gOwn + 1] = id end
  gKr[#gKr + 1] = id
  gFinQ[#gFinQ + 1], gFinQ[#gFinQ + 2] = id, id
  gFin[#gFin + 1], gFin[#gFin + 2] = NOWS, id
  FINALS[#FINALS + 1] = id
  if w then wfRunAdd(wr, w, to) end
end
-- endHinted ends job id of a 'g' record, claimed under fence, with the record's queue q, kind k,
-- owner o and workflow w: the hash is read for what may have changed since the claim. It
-- returns 1 when the outcome applied, else 0.
local function endHinted(id, fence, q, k, o, w)
  local jk = jkey(id)
  local v = rcall('HMGET', jk, 's', 'f', 'cr', 'dp')
  if v[1] ~= 'running' or v[2] ~= fence then return 0 end
  local to = bareState
  if v[3] then to = bareCancel end
  endPlain(id, jk, {'s', to, 'z', NOWS}, q, k, o, w, v[4])
  return 1
end
-- applyRecord applies the 'c' or 'o' record at pos. It returns where the next record starts, and
-- 1 when the outcome applied, else 0.
local function applyRecord(pos)
  local id, fence, state, cancelState, runAt, refund, errText, trace, errAt, hasResult, result
  if ARGV[pos] == 'c' then
    id, fence, state, cancelState = ARGV[pos + 1], ARGV[pos + 2], bareState, bareCancel
    runAt, refund, errText, trace, errAt, hasResult, result = '', '', '', '', '', '', ''
    pos = pos + 3
  else
    id, fence, state, cancelState = ARGV[pos + 1], ARGV[pos + 2], ARGV[pos + 3], ARGV[pos + 4]
    runAt, refund, errText, trace = ARGV[pos + 5], ARGV[pos + 6], ARGV[pos + 7], ARGV[pos + 8]
    errAt, hasResult, result = ARGV[pos + 9], ARGV[pos + 10], ARGV[pos + 11]
    pos = pos + 12
  end
  local jk = jkey(id)
  local v = rcall('HMGET', jk, 's', 'f', 'cr', 'q', 'k', 'o', 'u', 'sc', 'a', 'dp', 'W')
  if v[1] == 'running' and v[2] == fence then
    local to = state
    if v[3] then to = cancelState end
    local a = v[9]
    local errors
    if errText ~= '' then
      local at = errAt
      if at == '' then at = NOWS end
      local w = rcall('HMGET', jk, 'E', 't')
      errors = (w[1] or '') .. errLine(a, at, errText, trace, v[6] or nil, w[2] or nil)
    end
    if FINAL[to] and not v[7] and not v[8] then
      local set = {'s', to, 'z', NOWS}
      if refund == '1' then set[5], set[6] = 'a', fmt(math.max(tonumber(a) - 1, 0)) end
      if errors then
        set[#set + 1] = 'E'
        set[#set + 1] = errors
      end
      if hasResult == '1' then
        set[#set + 1] = 'R'
        set[#set + 1] = result
      end
      endPlain(id, jk, set, v[4], v[5], v[6], v[11], v[10])
    else
      local h = {i = id, s = v[1], f = v[2], q = v[4], k = v[5], a = a}
      if v[3] then h.cr = v[3] end
      if v[6] then h.o = v[6] end
      if v[7] then
        h.u = v[7]
        h.us = rcall('HGET', jk, 'us') or nil
      end
      if v[8] then h.sc = v[8] end
      if v[10] then h.dp = v[10] end
      if v[11] then h.W = v[11] end
      if not FINAL[to] then
        local w = rcall('HMGET', jk, 'p', 'r', 'x', 't')
        h.p, h.r, h.x, h.t = w[1], w[2], w[3] or nil, w[4] or nil
      end
      local f = {o = false, l = false}
      if FINAL[to] then
        f.z = NOWS
      elseif runAt == 'now' then
        f.r = NOWS
      elseif runAt ~= '' then
        f.r = runAt
      end
      if refund == '1' then f.a = fmt(math.max(tonumber(a) - 1, 0)) end
      if errors then f.E = errors end
      if hasResult == '1' then f.R = result end
      move(h, to, f)
      -- Claimable at once (handed back, or to run again now): wake the queue's idle nodes.
      if not FINAL[to] and tonumber(h.r) <= NOW then RELEASED[h.q] = true end
    end
    return pos, 1
  end
  return pos, 0
end
-- Outcomes read only job hashes and uq, never an index, so the index writes go out together.
deferIndex()
local pos, j = 7, 0
while j < n do
  if ARGV[pos] == 'g' then
    -- Bare completions of plain jobs whose fields the claim left (see the header).
    local m, q, k, w, o = tonumber(ARGV[pos + 1]), ARGV[pos + 2], ARGV[pos + 3], ARGV[pos + 4], ARGV[pos + 5]
    if w == '' then w = false end
    pos = pos + 6
    for _ = 1, m do
      applied[#applied + 1] = endHinted(ARGV[pos], ARGV[pos + 1], q, k, o, w)
      pos = pos + 2
    end
    j = j + m
  else
    local ok
    pos, ok = applyRecord(pos)
    applied[#applied + 1] = ok
    j = j + 1
  end
end
wfRunFlush(wr)
flushIndex()
if #plain > 0 then
  variadic('ZREM', P .. 'run', plain)
  for q, ids in pairs(runQ) do variadic('ZREM', sqKey('running', q), ids) end
  for o, ids in pairs(own) do variadic('SREM', P .. 'own:' .. o, ids) end
  for k, ids in pairs(kr) do variadic('SREM', P .. 'kr:' .. k, ids) end
  for to, byQueue in pairs(finQ) do
    for q, pairs_ in pairs(byQueue) do variadic('ZADD', sqKey(to, q), pairs_) end
  end
  for to, pairs_ in pairs(fin) do variadic('ZADD', P .. 'fin:' .. to, pairs_) end
end
finish()
return applied
