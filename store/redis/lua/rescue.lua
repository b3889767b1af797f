-- rescue: ARGV[4] n, then per job: id, fence, end state, end state when a cancel is requested,
-- error (JSON string). Go decided both states and the words (store.RescueState, RescueError)
-- from what rescuefind read; which state applies is read here, as complete does, because a
-- Cancel between the two scripts records its request on the job that still runs. A job is
-- rescued only if it still runs under that fence with its lease ended, so two rescues never
-- rescue one job twice.
checkMeta()
local rows = {}
for j = 0, tonumber(ARGV[4]) - 1 do
  local b = 5 + j * 5
  local h = load(ARGV[b])
  if h and h.s == 'running' and h.f == ARGV[b + 1] and tonumber(h.l) < NOW then
    local to = h.cr and ARGV[b + 3] or ARGV[b + 2]
    local f = {o = false, l = false, E = (h.E or '') .. errLine(h.a, NOWS, ARGV[b + 4], '', h.o, h.t)}
    if FINAL[to] then f.z = NOWS else f.r = NOWS end
    move(h, to, f)
    -- Retryable and due now: the queue's idle nodes are woken, as by an insert.
    if not FINAL[to] then RELEASED[h.q] = true end
    rows[#rows + 1] = row(h.i)
  end
end
finish()
return rows
