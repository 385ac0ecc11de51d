-- get_once: KEYS = hash, fence, marker. Reads only: the lease as get.lua
-- gives it, followed by the done record of --once-per.
local now = clock()
local l = read_lease(KEYS[1], KEYS[2])
local till = free(l, now) and quarantine_seen(KEYS[3], now)
if till then quarantined(l, now, till) end
return once_reply(now, false, l, read_once(KEYS[1] .. ':once'))
