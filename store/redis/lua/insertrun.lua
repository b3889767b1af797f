-- insertrun: insert's script for a call whose jobs are one run of plain jobs (ARGV as insert's,
-- its one record a 'P' run), as nearly every call of producers inserting one job at a time is.
-- It writes what insertJobs writes for such a run (and names the kind for the queue for
-- scheduled jobs too), with two tables where insertJobs makes a dozen: a table costs Redis about
-- 1.5 µs to make and collect, near what a redis.call costs, and a call of one job is mostly such
-- fixed costs. New plain jobs end nothing and have nothing to settle. It returns the time and
-- the first new id as one text ("<now> <id>"): a table in a reply costs as much again. Two calls
-- every insert once made are made only when needed: the meta hash is read when the id counter
-- starts (newIds), and the queue is added to the queues set when its kind is new to it (addKind).
local k, q, p, m, tags, meta = ARGV[7], ARGV[8], ARGV[9], ARGV[10], ARGV[12], ARGV[13]
local n = tonumber(ARGV[14])
local first = newIds(n)
local r, state = runStart(ARGV[11])
addKind(q, k)
-- byId is the state index's score-member pairs, order the ready set's (available) or the wait
-- set's (scheduled).
local byId, order = {}, {}
local np = state == 'available' and negPriority(p)
for j = 0, n - 1 do
  local id = fmt(first + j)
  hsetPlain(id, k, q, ARGV[15 + j], p, m, r, state, tags, meta)
  byId[2 * j + 1], byId[2 * j + 2] = id, id
  if np then
    order[2 * j + 1], order[2 * j + 2] = np, member(r, id)
  else
    order[2 * j + 1], order[2 * j + 2] = r, id
  end
end
variadic('ZADD', P .. 'sq:' .. state .. ':' .. q, byId)
if np then
  variadic('ZADD', rkey(q, k), order)
  publishInsert(ARGV[4], q)
else
  variadic('ZADD', P .. 'w:' .. q, order)
end
return NOWS .. ' ' .. fmt(first)
