-- insertdeps: the dependency fields of inserted jobs. Go sends them as one argument per job, ''
-- for a job with none, else six length-prefixed strings
-- ("<len>:<bytes>", so any bytes may be in a workflow's name): workflow, step, the ids of jobs it
-- depends on, the indexes of earlier jobs of the call it depends on (both comma-separated),
-- '1' when it ignores failed dependencies, the id of the pending job it joins (DependencyOf), and
-- '1' when its step is numbered by its place there (NumberStep).
local function splitDeps(s)
  local f, pos = {}, 1
  while pos <= #s do
    local c = string.find(s, ':', pos, true)
    local n = tonumber(string.sub(s, pos, c - 1))
    f[#f + 1] = string.sub(s, c + 1, c + n)
    pos = c + n + 1
  end
  local function list(v)
    local l = {}
    for x in string.gmatch(v, '[^,]+') do l[#l + 1] = x end
    return l
  end
  return {w = f[1], st = f[2], d = list(f[3]), di = list(f[4]), ig = f[5] == '1', of = f[6],
    n = f[6] ~= '' and f[7] == '1'}
end

-- readDeps decodes the dependency fields of the call's jobs sent whole (full: {job index from 0,
-- ARGV position of its fields} in the call's order), by job index, and checks
-- them before anything is written: a dependency the store does not hold fails the whole call
-- (NOTFOUND), and so does joining a job that is not pending (NOTPENDING).
local function readDeps(full, at)
  local deps = {}
  for _, f in ipairs(full) do
    local j, v = f[1], ARGV[f[2] + at]
    if v ~= '' then
      local x = splitDeps(v)
      deps[j] = x
      for _, d in ipairs(x.d) do
        if rcall('EXISTS', jkey(d)) == 0 then fail('NOTFOUND ' .. d) end
      end
      if x.of ~= '' then
        local s = rcall('HGET', jkey(x.of), 's')
        if not s then fail('NOTFOUND ' .. x.of) end
        if s ~= 'pending' then fail('NOTPENDING ' .. x.of) end
      end
    end
  end
  return deps
end

-- PLACES counts, per job joined by this call, the jobs it waits for (its D field): a numbered
-- step's place (nextPlace) without reading D again per job. Read from D at the first numbered
-- job, it counts each job join adds after; insertJobs starts it empty.
local PLACES = {}
local function nextPlace(of)
  local n = PLACES[of]
  if not n then
    local d = rcall('HGET', jkey(of), 'D')
    n = d and select(2, string.gsub(d, ',', ',')) + 1 or 0
    PLACES[of] = n
  end
  return fmt(n + 1)
end

-- PLACED is the workflows this call has put in wfs already: a fan-out's thousands of steps are
-- all in one workflow. insertJobs starts it empty: the library's state outlives a call.
local PLACED = {}

-- waitOn gives new job h (fields not yet written) its dependencies, ids resolving the call's
-- earlier jobs by index, and returns its state: cancelled when one has already failed and h does
-- not ignore failures, pending with edges (addEdge) to those that have not ended, else runnable
-- (state).
local function waitOn(h, x, ids, state)
  local list, seen = {}, {}
  local function add(d)
    if not seen[d] then
      seen[d] = true
      list[#list + 1] = d
    end
  end
  for _, d in ipairs(x.d) do add(d) end
  for _, k in ipairs(x.di) do add(ids[tonumber(k)]) end
  if #list == 0 then return state end
  h.D = table.concat(list, ',')
  local wait = {}
  for _, d in ipairs(list) do
    local s = rcall('HGET', jkey(d), 's')
    if s and not FINAL[s] then
      wait[#wait + 1] = d
    elseif s and s ~= 'completed' and not h.ig then
      h.z = NOWS
      h.E = errLine('0', NOWS, depError(d, s), '')
      return 'cancelled'
    end
  end
  if #wait == 0 then return state end
  local info = relEntry(h, #wait == 1 and state == 'available')
  for _, d in ipairs(wait) do addEdge(d, h.i, info) end
  -- dn is written only above one: most dependents wait for one job (a fan-out's steps), and a
  -- field fewer in each of their hashes is less for every claim and completion to read.
  if #wait > 1 then h.dn = fmt(#wait) end
  return 'pending'
end

-- join adds new job d, in state s, to the dependencies of the pending job of: counted and waited
-- for when d has not ended, and settled at once when it has. A job an earlier job of the same
-- call ended (readDeps found it pending) takes d into its list and changes nothing else. Only
-- the fields it changes are read: a batch's callback gains its dependencies one insert at a time.
local function join(of, d, s)
  local k = jkey(of)
  local v = rcall('HMGET', k, 's', 'D', 'ig', 'dn')
  local deps = d
  if v[2] then deps = v[2] .. ',' .. d end
  if PLACES[of] then PLACES[of] = PLACES[of] + 1 end
  if v[1] ~= 'pending' then
    rcall('HSET', k, 'D', deps)
    return
  end
  if not FINAL[s] then
    -- A second wait: an entry of of's that vouched for one no longer does.
    forgetEntries(of, v[2], v[4])
    addEdge(d, of)
    rcall('HSET', k, 'D', deps, 'dn', fmt(tonumber(v[4] or '1') + 1))
  elseif s == 'completed' or v[3] then
    rcall('HSET', k, 'D', deps)
  else
    local h = load(of)
    move(h, 'cancelled', {D = deps, z = NOWS, E = (h.E or '') .. errLine(h.a, NOWS, depError(d, s), '')})
  end
end

-- placeInWorkflow adds new job h, in its state, to its workflow's indexes.
local function placeInWorkflow(h)
  rcall('ZADD', P .. 'wf:' .. h.W, h.i, h.i)
  if not PLACED[h.W] then
    PLACED[h.W] = true
    rcall('ZADD', P .. 'wfs', 0, h.W)
  end
  wfDelta(h.W, nil, h.s)
end
