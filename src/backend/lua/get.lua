-- get: KEYS = hash, fence. Reads only.
local now = clock()
return reply(now, false, read_lease(KEYS[1], KEYS[2]))
