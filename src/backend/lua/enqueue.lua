-- enqueue: KEYS = hash, fence; ARGV = contender[, ttl_ms, transition_ms].
-- Joins the mutex's queue of waiters (a no-op when already in it), with the
-- terms a release hands the mutex over on (common.lua: hand_over; without
-- them the waiter is only woken). The queue keys expire a day after their
-- last use; entries of waiters that died go when a release meets them.
local now, now_us = clock()
local queue = KEYS[1] .. ':waiters'
redis.call('ZADD', queue, 'NX', int(now_us), ARGV[1])
redis.call('PEXPIRE', queue, 86400000)
if ARGV[3] then
  local terms = KEYS[1] .. ':terms'
  redis.call('HSET', terms, ARGV[1], ARGV[2] .. ' ' .. ARGV[3])
  redis.call('PEXPIRE', terms, 86400000)
end
return reply(now, false, read_lease(KEYS[1], KEYS[2]))
