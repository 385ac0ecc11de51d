-- release: KEYS = hash, fence; ARGV = contender. Only the valid owner's
-- own lease ends, at once: the hash goes (the fence counter keeps the
-- token), and the waiters hear it.
local now = clock()
local l = read_lease(KEYS[1], KEYS[2])
if not valid(l, now) or l.owner ~= ARGV[1] then
  return reply(now, false, l)
end
redis.call('DEL', KEYS[1])
-- the releaser is no waiter (should its dequeue have failed)
redis.call('ZREM', KEYS[1] .. ':waiters', ARGV[1])
wake_first_waiter(KEYS[1])
l.owner = ''
l.ttl_at = math.min(l.ttl_at, now)
l.transition_at = now
return reply(now, true, l)
