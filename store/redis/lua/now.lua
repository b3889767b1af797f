#!ro
return NOWS
