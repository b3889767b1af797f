-- retryworkflow: ARGV[4] workflow. Runs its discarded, cancelled and expired steps again, as
-- retryplan.Again decides for every store: not one that would wait for a job that ended without
-- completing and does not run again (outside the workflow, or a step left as it is), nor in turn
-- those that wait for it. Each step run again waits again (pending, its edges registered anew)
-- for the dependencies run again with it or not ended yet, and is available now when there are
-- none; one whose attempts are used up gets one more. A dependency no longer held (pruned) is not
-- waited for: it can neither end nor be known to have failed. Returns the changed rows, in id
-- order.
checkMeta()
local wk = P .. 'wf:' .. ARGV[4]
local steps = rcall('ZRANGE', wk, 0, -1)
if #steps == 0 then return 'NOTFOUND' end
-- state holds the states of the steps and of the jobs the failed ones name (false: gone).
local again, failed, hs, state = {}, {}, {}, {}
for _, id in ipairs(steps) do
  local s = rcall('HGET', jkey(id), 's')
  state[id] = s or false
  if s == 'discarded' or s == 'cancelled' or s == 'expired' then
    again[id] = true
    failed[#failed + 1] = id
    hs[id] = load(id)
  end
end
local deps = {} -- a failed step's dependencies, once each
for _, id in ipairs(failed) do
  local list, seen = {}, {}
  for d in string.gmatch(hs[id].D or '', '[^,]+') do
    if not seen[d] then
      seen[d] = true
      list[#list + 1] = d
      if state[d] == nil then state[d] = rcall('HGET', jkey(d), 's') or false end
    end
  end
  deps[id] = list
end
local function waitsFor(s, ig)
  if ig then return not FINAL[s] end
  return s ~= 'completed'
end
local changed = true
while changed do
  changed = false
  for _, id in ipairs(failed) do
    if again[id] then
      for _, d in ipairs(deps[id]) do
        local s = state[d]
        if s and not again[d] and FINAL[s] and waitsFor(s, hs[id].ig) then
          again[id] = nil
          changed = true
          break
        end
      end
    end
  end
end
local rows = {}
for _, id in ipairs(failed) do
  if again[id] then
    local h = hs[id]
    local wait = 0
    for _, d in ipairs(deps[id]) do
      local s = state[d]
      if again[d] or (s and not FINAL[s]) then
        wait = wait + 1
        addEdge(d, id)
      else
        dropEdge(d, id)
      end
    end
    local f = {m = fmt(math.max(tonumber(h.m), tonumber(h.a or '0') + 1)), cr = false, o = false, l = false, z = false}
    if h.x and tonumber(h.x) <= NOW then f.x = false end
    -- The count is absent for one (see waitOn): one left by the step's last release (which
    -- keeps it) would hold it back.
    f.dn = wait > 1 and fmt(wait) or false
    if wait > 0 then
      -- A step that waits keeps its run_at, which its release compares with the time then.
      move(h, 'pending', f)
    else
      f.r = NOWS
      move(h, 'available', f)
      RELEASED[h.q] = true
    end
  end
end
-- A pending step that ignores failed dependencies (a batch's callback) counted each of those
-- run again off when it failed: it waits for their new ends too (retryplan.Rewait), unless an
-- end of theirs that is parked and not settled still holds its edge to it.
for _, id in ipairs(steps) do
  if state[id] == 'pending' and not again[id] then
    local k = jkey(id)
    local v = rcall('HMGET', k, 'D', 'ig', 'dn')
    if v[1] and v[2] then
      local seen = {}
      for d in string.gmatch(v[1], '[^,]+') do
        if again[d] and not seen[d] then
          seen[d] = true
          if edgesOf(d) ~= '=' .. id and rcall('SISMEMBER', P .. 'dep:' .. d, id) == 0 then
            forgetEntries(id, v[1], v[3])
            addEdge(d, id)
            v[3] = fmt(tonumber(v[3] or '1') + 1)
            rcall('HSET', k, 'dn', v[3])
          end
        end
      end
    end
  end
end
for _, id in ipairs(failed) do
  if again[id] then rows[#rows + 1] = row(id) end
end
finish()
return rows
