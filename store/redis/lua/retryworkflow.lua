-- retryworkflow: ARGV[4] workflow. Runs its discarded, cancelled and expired steps (F) again:
-- each waits again (pending, its edges registered anew) for the dependencies it still waits for
-- (store.WaitsFor) or that are retried with it, and is available now when there are none; one
-- whose attempts are used up gets one more. A dependency no longer held (pruned) is not waited
-- for: it can neither end nor be known to have failed. Returns the changed rows, in id order.
checkMeta()
local wk = P .. 'wf:' .. ARGV[4]
local steps = redis.call('ZRANGE', wk, 0, -1)
if #steps == 0 then return 'NOTFOUND' end
local failed, again = {}, {}
for _, id in ipairs(steps) do
  local s = redis.call('HGET', jkey(id), 's')
  if s == 'discarded' or s == 'cancelled' or s == 'expired' then
    failed[id] = true
    again[#again + 1] = id
  end
end
local rows = {}
for _, id in ipairs(again) do
  local h = load(id)
  local wait, seen = 0, {}
  for d in string.gmatch(h.D or '', '[^,]+') do
    if not seen[d] then
      seen[d] = true
      local s = redis.call('HGET', jkey(d), 's')
      local waits = failed[d]
      if not waits and s then
        if h.ig then waits = not FINAL[s] else waits = s ~= 'completed' end
      end
      if waits then
        wait = wait + 1
        redis.call('SADD', P .. 'dep:' .. d, id)
        redis.call('HSET', jkey(d), 'dp', '1')
      end
    end
  end
  local f = {r = NOWS, m = fmt(math.max(tonumber(h.m), tonumber(h.a) + 1)), cr = false, o = false, l = false, z = false}
  if h.x and tonumber(h.x) <= NOW then f.x = false end
  if wait > 0 then
    f.dn = fmt(wait)
    move(h, 'pending', f)
  else
    move(h, 'available', f)
    RELEASED[h.q] = true
  end
end
for _, id in ipairs(again) do rows[#rows + 1] = row(id) end
finish()
return rows
