-- doctor_marker (simba doctor, redis/doctor_marker.cpp): the database's
-- marker as the next acquire would read it (common.lua, "The server run"),
-- without writing. KEYS[1]: the marker. Answers {now, the run the marker
-- names ('' none), the run of this connection's server, the quarantine's
-- end (0 none)}.
local now = clock()
local m = read_marker(KEYS[1])
local till = quarantine_seen(KEYS[1], now) or 0
return {now, m[1] or '', SERVER_RUN, till}
