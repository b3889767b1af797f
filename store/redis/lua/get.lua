#!ro
-- get: ARGV[4] id.
checkMeta()
return row(ARGV[4])
