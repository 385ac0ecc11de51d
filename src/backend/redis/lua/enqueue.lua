-- enqueue: KEYS = hash, fence; ARGV = contender[, ttl_ms, transition_ms[,
-- holder[, gives up at[, score]]]]. The holder (backend/holder.hpp) goes to
-- <hash>:who, keyed by the contender: status lists the waiters with it, and
-- a hand-over writes it as the new lease's holder (common.lua: hand_over).
-- When the waiter gives up (its --timeout's end, epoch ms by its clock;
-- '' never) goes to <hash>:until, for status only.
-- Joins the mutex's queue of waiters (a no-op when already in it), with the
-- terms a release hands the mutex over on (common.lua: hand_over; without
-- them the waiter is only woken). The queue expires a day after its last
-- use; entries of waiters that died go when a release meets them.
-- ARGV[6]: the score to queue with (see below), when queuing again.
-- The score is the server's time in ms (x 1000: the µs of older simbas),
-- which the waiter reads from the reply's now: a waiter that lost its
-- place (the server lost its data, its subscription broke) queues again
-- with its first score, so that the queue keeps the order of arrival (ties
-- are ordered by member, the same both times).
local now = clock()
local queue = KEYS[1] .. ':waiters'
local m = ARGV[3] and member(ARGV[1], ARGV[2], ARGV[3]) or ARGV[1]
local score = tonumber(ARGV[6] or '') or 0
if score <= 0 then score = now * 1000 end
redis.call('ZADD', queue, 'NX', int(score), m)
redis.call('PEXPIRE', queue, 86400000)
if ARGV[4] and ARGV[4] ~= '' then
  redis.call('HSET', KEYS[1] .. ':who', ARGV[1], ARGV[4])
  redis.call('PEXPIRE', KEYS[1] .. ':who', 86400000)
end
if ARGV[5] and ARGV[5] ~= '' then
  redis.call('HSET', KEYS[1] .. ':until', ARGV[1], ARGV[5])
  redis.call('PEXPIRE', KEYS[1] .. ':until', 86400000)
end
return reply(now, false, read_lease(KEYS[1], KEYS[2]))
