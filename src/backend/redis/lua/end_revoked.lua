-- end_revoked: KEYS = hash, fence, marker; ARGV = contender (the former
-- owner), token. The lease with fencing token `token`, revoked by
-- force_release (no owner, transition_at kept so that its CMD stops
-- first), ends now: its former owner calls this only once it has seen CMD
-- and all CMD started gone (backend.hpp: end_revoked). The mutex goes to the
-- first live waiter (common.lua: hand_over), or the hash goes. A valid
-- lease, another token, a slot's hash: unchanged. No history event: the
-- revocation wrote 'forced', the owner 'lost'.
local now, now_us = clock()
local l = read_lease(KEYS[1], KEYS[2])
local token = tonumber(ARGV[2])
-- (A missing hash reads as transition_at 0: never revoked.)
if token == 0 or l.owner ~= '' or l.token ~= token or now >= l.transition_at
    or marker_of(KEYS[1]) then
  return reply(now, false, l)
end
note_end(KEYS[3], l.len) -- the longest lease may age out (common.lua)
if hand_over(KEYS[1], KEYS[2], KEYS[3], now, now_us, l.token, ARGV[1]) then
  return reply(now, true, read_lease(KEYS[1], KEYS[2]))
end
end_lease_now(KEYS[1], l, now)
return reply(now, true, l)
