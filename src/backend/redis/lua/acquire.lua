-- acquire: KEYS = hash, fence, marker; ARGV = contender, ttl_ms,
-- transition_ms[, holder] (backend/holder.hpp: written with a new lease).
-- The rule of DESIGN §2: a new lease once transition_at has passed (or
-- there is none), a renewal for the valid owner, otherwise the lease
-- unchanged. Who may take a lease that ran out, or the mutex after a
-- quarantine: the first live waiter, for a while (fifo_refuses).
local now, now_us = clock()
local l = read_lease(KEYS[1], KEYS[2])
local me = ARGV[1]
local ttl, transition = tonumber(ARGV[2]), tonumber(ARGV[3])
local taken = false
if not free(l, now) then
  quarantine_end(KEYS[3], now, ttl + transition) -- starts one if due (common.lua)
  if not valid(l, now) or l.owner ~= me then
    return reply(now, false, l)
  end
  -- a renewal: acquired_at and the token stay
else
  -- No new lease while Redis may have lost one whose CMD still runs
  -- (common.lua: quarantine_end); shown as a quarantine that ends then, so
  -- that waiters sleep until it does.
  local till, ended = quarantine_end(KEYS[3], now, ttl + transition)
  if till then
    return reply(now, false, quarantined(l, now, till))
  end
  -- FIFO (common_queue.lua: fifo_since): after a lease that ran out or a
  -- quarantine, the first live waiter first.
  local since = fifo_since(l, now, ended)
  if fifo_refuses(KEYS[1], me, since, now) then
    return reply(now, false, fifo_refusal(l, since))
  end
  take_new_lease(KEYS[1], KEYS[2], l, me, ARGV[2], ARGV[3], now, now_us, ARGV[4])
  taken = true
end
renew(KEYS[1], l, now, ttl, transition)
if taken then set_holder(KEYS[1], l.token, ARGV[4]) end
return reply(now, true, l)
