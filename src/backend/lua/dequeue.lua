-- dequeue: KEYS = hash, fence; ARGV = contender. Leaves the queue of waiters.
-- A waiter leaves only while it owns nothing it knows of (simba stops
-- calling this once it owns the mutex), so a lease a release handed it
-- meanwhile (common.lua: hand_over) was never used: it ends, and goes on to
-- the next waiter.
local now, now_us = clock()
redis.call('ZREM', KEYS[1] .. ':waiters', ARGV[1])
redis.call('HDEL', KEYS[1] .. ':terms', ARGV[1])
local l = read_lease(KEYS[1], KEYS[2])
if valid(l, now) and l.owner == ARGV[1] then
  if not hand_over(KEYS[1], KEYS[2], now, now_us) then redis.call('DEL', KEYS[1]) end
  return reply(now, true, read_lease(KEYS[1], KEYS[2]))
end
return reply(now, false, l)
