-- get: KEYS = hash, fence, marker. Reads only.
local now = clock()
local l = read_lease(KEYS[1], KEYS[2])
local till = free(l, now) and quarantine_seen(KEYS[3], now)
if till then quarantined(l, now, till) end
return reply(now, false, l)
