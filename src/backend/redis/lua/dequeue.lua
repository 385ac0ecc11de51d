-- dequeue: KEYS = hash, fence, marker; ARGV = contender[, ttl_ms, transition_ms]
-- (the terms it queued with). Leaves the queue of waiters. A lease a
-- release handed this waiter (common.lua: hand_over) that it never claimed
-- (still marked `handed`) ends, and goes on to the next waiter: it never
-- heard the grant, so it knows no token to compare. A claimed one (the
-- waiter's own acquire renewed it, clearing the mark) stays: this dequeue
-- may be a late one, sent before that acquire on a connection that was
-- slower (a timed-out call, a slow link), and the lease's CMD may run.
-- The owner id is unique per simba process (DESIGN §9).
local now, now_us = clock()
local queue = KEYS[1] .. ':waiters'
if ARGV[3] then
  redis.call('ZREM', queue, member(ARGV[1], ARGV[2], ARGV[3]), ARGV[1])
else
  redis.call('ZREM', queue, ARGV[1])
end
forget_waiter(KEYS[1], ARGV[1])
local l = read_lease(KEYS[1], KEYS[2])
if valid(l, now) and l.owner == ARGV[1] and l.handed then
  if not hand_over(KEYS[1], KEYS[2], KEYS[3], now, now_us, l.token, ARGV[1]) then redis.call('DEL', KEYS[1]) end
  return reply(now, true, read_lease(KEYS[1], KEYS[2]))
end
return reply(now, false, l)
