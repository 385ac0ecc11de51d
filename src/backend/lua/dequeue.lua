-- dequeue: KEYS = hash, fence; ARGV = contender. Leaves the queue of waiters.
local now = clock()
redis.call('ZREM', KEYS[1] .. ':waiters', ARGV[1])
return reply(now, false, read_lease(KEYS[1], KEYS[2]))
