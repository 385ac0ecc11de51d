-- release: KEYS = hash, fence, marker; ARGV = contender, token (0: whatever
-- lease the contender owns, see backend.hpp)[, CMD's exit code ('' unknown):
-- for the history]. Only the valid owner's own
-- lease, with that token, ends, at once, and the mutex goes to the first live waiter
-- (common.lua: hand_over), or, with nobody waiting, the hash goes (the fence
-- counter keeps the token). The reply is the lease after the call: the new
-- owner's, or none.
local now, now_us = clock()
local l = read_lease(KEYS[1], KEYS[2])
local token = tonumber(ARGV[2])
if not valid(l, now) or l.owner ~= ARGV[1] or (token ~= 0 and l.token ~= token) then
  return reply(now, false, l)
end
local mutex = marker_of(KEYS[1]) -- a slot (common.lua: Slots)
ended(mutex or KEYS[1], l, now, 'released', ARGV[3])
note_end(KEYS[3], l.len) -- the longest lease may age out (common.lua)
if mutex then
  free_slot_now(KEYS[1], l, now)
  wake_waiter(mutex, cover(mutex, KEYS[2], now))
  return reply(now, true, l)
end
if hand_over(KEYS[1], KEYS[2], KEYS[3], now, now_us, l.token, ARGV[1]) then
  return reply(now, true, read_lease(KEYS[1], KEYS[2]))
end
end_lease_now(KEYS[1], l, now)
return reply(now, true, l)
