-- settle: ARGV[4] how many parked ends to take. Settles the dependents finish() parked (see
-- settleDeps), as many as one call may, parking again what is still left; returns how many ends
-- stay parked.
checkMeta()
local key = P .. 'settling'
local got = rcall('HRANDFIELD', key, tonumber(ARGV[4]), 'WITHVALUES')
for i = 1, #got, 2 do
  rcall('HDEL', key, got[i])
  DEPQ[#DEPQ + 1] = {i = got[i], s = got[i + 1] ~= '' and got[i + 1]}
end
finish()
return rcall('HLEN', key)
