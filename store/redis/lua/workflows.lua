#!ro
-- workflows: ARGV[4] id ('' for a page), [5] before ('' for the newest), [6] limit. Per
-- workflow, newest (greatest id) first: id, created_at of its first step (the lowest id), and
-- its steps' counts by state (flat pairs). O(workflows on the page): the counts are kept by
-- every transition (wfc:<id>), never counted here.
checkMeta()
local ids
if ARGV[4] ~= '' then
  ids = {}
  if rcall('ZSCORE', P .. 'wfs', ARGV[4]) then ids[1] = ARGV[4] end
else
  local from = '+'
  if ARGV[5] ~= '' then from = '(' .. ARGV[5] end
  ids = rcall('ZRANGE', P .. 'wfs', from, '-', 'BYLEX', 'REV', 'LIMIT', 0, tonumber(ARGV[6]))
end
local out = {}
for _, w in ipairs(ids) do
  local first = rcall('ZRANGE', P .. 'wf:' .. w, 0, 0)[1]
  local created = ''
  if first then created = rcall('HGET', jkey(first), 'c') or '' end
  out[#out + 1] = {w, created, rcall('HGETALL', P .. 'wfc:' .. w)}
end
return out
