#!ro
-- nodelist: most recently seen first: id, last seen, JSON, jobs running under the id.
checkMeta()
local out = {}
local r = rcall('ZRANGE', P .. 'nodes', '+inf', '-inf', 'BYSCORE', 'REV', 'WITHSCORES')
for i = 1, #r, 2 do
  out[#out + 1] = {r[i], r[i + 1], rcall('GET', P .. 'node:' .. r[i]) or '', rcall('SCARD', P .. 'own:' .. r[i])}
end
return out
