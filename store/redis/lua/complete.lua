-- complete: ARGV[4] n, then 11 fields per outcome: id, fence, state, the state when a cancel
-- was requested (store.CancelRequestedState), run_at ('' keeps, 'now', or µs), refund ('1'),
-- error text and trace (JSON strings, '' for none), error time ('' for now), has result ('1'),
-- result. An outcome applies only to a running job with its fence; outcomes apply in order.
checkMeta()
local n = tonumber(ARGV[4])
local applied = {}
-- Outcomes read only job hashes and uq, never an index, so the index writes go out together.
deferIndex()
for j = 0, n - 1 do
  local b = 5 + j * 11
  local h = load(ARGV[b])
  if h and h.s == 'running' and h.f == ARGV[b + 1] then
    local to = ARGV[b + 2]
    if h.cr then to = ARGV[b + 3] end
    local f = {o = false, l = false}
    if FINAL[to] then
      f.z = NOWS
    elseif ARGV[b + 4] == 'now' then
      f.r = NOWS
    elseif ARGV[b + 4] ~= '' then
      f.r = ARGV[b + 4]
    end
    if ARGV[b + 5] == '1' then f.a = fmt(math.max(tonumber(h.a) - 1, 0)) end
    if ARGV[b + 6] ~= '' then
      local at = ARGV[b + 8]
      if at == '' then at = NOWS end
      f.E = (h.E or '') .. errLine(h.a, at, ARGV[b + 6], ARGV[b + 7])
    end
    if ARGV[b + 9] == '1' then f.R = ARGV[b + 10] end
    move(h, to, f)
    applied[#applied + 1] = 1
  else
    applied[#applied + 1] = 0
  end
end
flushIndex()
publishFinals()
return applied
