-- leaseacquire: ARGV[4] name, [5] owner, [6] ttl µs. Returns held (1/0), owner, token,
-- acquired, expires. The token grows on every change of hands, floored by the time so that a
-- Redis that lost its last writes still hands out larger tokens.
checkMeta()
local key, owner, ttl = P .. 'lease:' .. ARGV[4], ARGV[5], tonumber(ARGV[6])
local v = rcall('HMGET', key, 'o', 't', 'a', 'x')
local exp = fmt(NOW + ttl)
if v[1] and v[1] ~= '' and v[1] == owner then
  rcall('HSET', key, 'x', exp)
  return {1, v[1], v[2], v[3], exp}
end
if not v[1] or v[1] == '' or tonumber(v[4]) < NOW then
  local tok = fmt(math.max(tonumber(rcall('GET', P .. 'lseq') or '0') + 1, NOW))
  rcall('SET', P .. 'lseq', tok)
  rcall('HSET', key, 'o', owner, 't', tok, 'a', NOWS, 'x', exp)
  return {1, owner, tok, NOWS, exp}
end
return {0, v[1], v[2], v[3], v[4]}
