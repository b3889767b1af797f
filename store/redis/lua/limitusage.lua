#!ro
-- limitusage: ARGV[4] queue, [5] kind. The limits a claim of the kind in the queue is held to,
-- the queue's first, each as {scope, name, spec, running, started}, counted as claim.lua's
-- readLimit counts them; the starts that left the window are only not counted here, not
-- forgotten (a read writes nothing).
checkMeta()
local out = {}
local function usage(scope, name)
  local spec = rcall('HGET', P .. 'lim', scope .. ':' .. name)
  if not spec then return end
  local mx, rate, per = string.match(spec, '^(%d+),(%d+),(%d+)$')
  local running, started = 0, 0
  if tonumber(mx) > 0 then
    if scope == 'queue' then
      running = rcall('ZCARD', sqKey('running', name))
    else
      running = rcall('SCARD', P .. 'kr:' .. name)
    end
  end
  if tonumber(rate) > 0 then
    local edge = '(' .. fmt(NOW - tonumber(per))
    for _, m in ipairs(rcall('ZRANGE', P .. 'rs:' .. scope .. ':' .. name, edge, '+inf', 'BYSCORE')) do
      started = started + tonumber(string.match(m, ':(%d+)$'))
    end
  end
  out[#out + 1] = {scope, name, spec, running, started}
end
usage('queue', ARGV[4])
usage('kind', ARGV[5])
return out
