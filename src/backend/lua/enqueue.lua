-- enqueue: KEYS = hash, fence; ARGV = contender. Joins the mutex's queue of
-- waiters (a no-op when already in it). The queue key expires a day after
-- its last use; entries of waiters that died go when a release meets them.
local now, now_us = clock()
local queue = KEYS[1] .. ':waiters'
redis.call('ZADD', queue, 'NX', int(now_us), ARGV[1])
redis.call('PEXPIRE', queue, 86400000)
return reply(now, false, read_lease(KEYS[1], KEYS[2]))
