-- insertrun: insert's script for a call whose jobs are one run of plain jobs, as nearly every
-- call of producers inserting one job at a time is. ARGV[4] the origin, [5..11] the fields the
-- jobs share (kind, queue, priority, max attempts, run_at or '', tags, metadata), then each
-- job's args: what insert's run record holds, without what tells records apart. It writes what
-- insertJobs writes for such a run (and names the kind for the queue for scheduled jobs too),
-- and a call of one job makes no table of its own: a table costs Redis about 1.5 µs to make and
-- collect, near what a redis.call costs, and a call of one job is mostly such fixed costs. New
-- plain jobs end nothing and have nothing to settle. It returns the time and the first new id
-- as one text ("<now> <id>"): a table in a reply costs as much again. Calls every insert once
-- made are made only when needed: the meta hash is read when the id counter starts (newIds),
-- and the kind is named for the queue once a second at most (addKindOnce).
local k, q, p, m, tags, meta = ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[10], ARGV[11]
local n = #ARGV - 11
local first = newIds(n)
local id0 = fmt(first)
local r, state = runStart(ARGV[9])
local rk = rkey(q, k)
addKindOnce(ARGV[4], q, k, rk)
local np = state == 'available' and negPriority(p)
local sk = sqKey(state, q)
if n == 1 then
  -- One job, as most calls carry: its index entries go straight into the calls, without the
  -- lists a run gathers them in (two tables, ~2 µs of Redis time to make and collect).
  hsetPlain(id0, k, q, ARGV[12], p, m, r, state, tags, meta)
  rcall('ZADD', sk, id0, id0)
  if np then
    rcall('ZADD', rk, np, member(r, id0))
  else
    rcall('ZADD', P .. 'w:' .. q, r, id0)
  end
else
  -- byId is the state index's score-member pairs, order the ready set's (available) or the
  -- wait set's (scheduled).
  local byId, order = {}, {}
  for j = 0, n - 1 do
    local id = j == 0 and id0 or fmt(first + j)
    hsetPlain(id, k, q, ARGV[12 + j], p, m, r, state, tags, meta)
    byId[2 * j + 1], byId[2 * j + 2] = id, id
    if np then
      order[2 * j + 1], order[2 * j + 2] = np, member(r, id)
    else
      order[2 * j + 1], order[2 * j + 2] = r, id
    end
  end
  variadic('ZADD', sk, byId)
  variadic('ZADD', np and rk or P .. 'w:' .. q, order)
end
if np then publishInsert(ARGV[4], q) end
return NOWS .. ' ' .. id0
