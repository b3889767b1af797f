-- cancelPlanned cancels the jobs schedule `name` planned that have not started (scheduled, or
-- available and never attempted), with why (a JSON string) as the error of the attempt they
-- never made.
local function cancelPlanned(name, why)
  for _, id in ipairs(rcall('SMEMBERS', P .. 'sj:' .. name)) do
    local h = load(id)
    if h and (h.s == 'scheduled' or (h.s == 'available' and not h.t)) then
      move(h, 'cancelled', {z = NOWS, E = (h.E or '') .. errLine(h.a, NOWS, why, '')})
    end
  end
end
