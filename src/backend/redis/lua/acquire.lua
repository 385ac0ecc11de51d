-- acquire: KEYS = hash, fence, marker; ARGV = contender, ttl_ms,
-- transition_ms.
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
  -- No new lease while Redis may have lost one whose CMD still runs
  -- (common.lua: quarantine_end); shown as a quarantine that ends then, so
  -- that waiters sleep until it does.
  local till = quarantine_end(KEYS[3], now, ttl + transition)
  if till then
    return reply(now, false, quarantined(l, now, till))
  end
  -- The new owner waits no more (queued with these terms, or by an older
  -- simba). First: a key of the wrong type fails here, before the fence
  -- moves (a failing script keeps the writes it made).
  redis.call('ZREM', KEYS[1] .. ':waiters', member(me, ARGV[2], ARGV[3]), me)
  -- A new token: above the last one, and never below the clock in
  -- microseconds, so that tokens keep increasing when a restart lost the
  -- counter (or restored an older snapshot of it).
  local last = fence_value(KEYS[2])
  l.token = redis.call('INCRBY', KEYS[2], int(math.max(1, now_us - last)))
  l.owner = me
  l.acquired_at = now
end
renew(KEYS[1], l, now, ttl, transition)
return reply(now, true, l)
