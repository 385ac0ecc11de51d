-- dequeue: KEYS = hash, fence, marker; ARGV = contender[, ttl_ms, transition_ms]
-- (the terms it queued with). Leaves the queue of waiters. A waiter leaves
-- only while it owns nothing it knows of (simba stops calling this once it
-- owns the mutex), so a lease a release handed it meanwhile (common.lua:
-- hand_over) was never used: it ends, and goes on to the next waiter. The
-- owner id is unique per simba process (DESIGN §9), so a lease of that id
-- is one handed to this very waiter; it never heard the grant, so it knows
-- no token to compare.
local now, now_us = clock()
local queue = KEYS[1] .. ':waiters'
if ARGV[3] then
  redis.call('ZREM', queue, member(ARGV[1], ARGV[2], ARGV[3]), ARGV[1])
else
  redis.call('ZREM', queue, ARGV[1])
end
redis.call('HDEL', KEYS[1] .. ':who', ARGV[1])
local l = read_lease(KEYS[1], KEYS[2])
if valid(l, now) and l.owner == ARGV[1] then
  if not hand_over(KEYS[1], KEYS[2], KEYS[3], now, now_us, l.token, ARGV[1]) then redis.call('DEL', KEYS[1]) end
  return reply(now, true, read_lease(KEYS[1], KEYS[2]))
end
return reply(now, false, l)
