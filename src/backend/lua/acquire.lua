-- acquire: KEYS = hash, fence; ARGV = contender, ttl_ms, transition_ms,
-- quarantine (1: after a server start, see below; 0: off).
-- The rule of DESIGN §2: a new lease once transition_at has passed (or
-- there is none), a renewal for the valid owner, otherwise the lease
-- unchanged.
local now, now_us = clock()
local l = read_lease(KEYS[1], KEYS[2])
local me = ARGV[1]
local ttl, transition = tonumber(ARGV[2]), tonumber(ARGV[3])
if not free(l, now) then
  if not valid(l, now) or l.owner ~= me then
    return reply(now, false, l)
  end
  -- a renewal: acquired_at and the token stay
else
  -- A server that started less than a lease ago may have lost a lease that
  -- is still running (no persistence, a failover): its owner's CMD may run
  -- until that lease's end. No new lease before then (the "delayed
  -- restart" of the Redis distlock notes), shown as a revoked lease that
  -- ends when the quarantine does, so that waiters sleep until then.
  -- The fence never expires: while it exists this mutex lost nothing, and
  -- INFO (not cheap) is asked only for a mutex new to this server.
  local up = ARGV[4] == '1' and redis.call('EXISTS', KEYS[2]) == 0 and
      tonumber(string.match(redis.call('INFO', 'server'), 'uptime_in_seconds:(%d+)'))
  local quarantine = ttl + transition + 1000
  if up and up * 1000 < quarantine then
    local started = now - up * 1000 -- the latest it can have started (whole seconds)
    if started + quarantine > l.transition_at then
      l.owner = ''
      l.ttl_at = now
      l.transition_at = started + quarantine
    end
    return reply(now, false, l)
  end
  -- A new token: above the last one, and never below the clock in
  -- microseconds, so that tokens keep increasing when a restart lost the
  -- counter (or restored an older snapshot of it).
  local last = fence_value(KEYS[2])
  l.token = redis.call('INCRBY', KEYS[2], int(math.max(1, now_us - last)))
  l.owner = me
  l.acquired_at = now
  -- the new owner waits no more (queued with these terms, or by an older simba)
  redis.call('ZREM', KEYS[1] .. ':waiters', member(me, ARGV[2], ARGV[3]), me)
end
renew(KEYS[1], l, now, ttl, transition)
return reply(now, true, l)
