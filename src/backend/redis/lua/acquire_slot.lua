-- acquire_slot: KEYS = the mutex's hash (the marker, see common.lua:
-- Slots), fence, marker of the server run; ARGV = contender, ttl_ms,
-- transition_ms, slots[, holder]. --slots N: the slot the contender holds
-- is renewed, else the first free one is taken (a token from the shared
-- fence), else the slot that frees first is answered. A marker of another
-- N (or a plain holder) refuses. The reply adds the slot and the N that
-- refused (0: none).
local now, now_us = clock()
local me, ttl, transition, n = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local m = read_lease(KEYS[1], KEYS[2])
local recorded = free(m, now) and 0 or slots_of(m.owner)
local function answer(changed, l, slot, refused)
  local r = reply(now, changed, l)
  r[#r + 1] = slot
  r[#r + 1] = refused
  return r
end
if recorded ~= 0 and recorded ~= n then return answer(false, m, 0, recorded) end
-- Whatever this acquire answers, a new server run starts its quarantine
-- now (common.lua: quarantine_end); it refuses a new slot lease below.
local till = quarantine_end(KEYS[3], now, ttl + transition)
-- A revoked marker (not free, no owner) no longer says N: wait until it is free.
if not free(m, now) and m.owner == '' then return answer(false, m, 0, 0) end
local mine, first_free, soonest, soonest_held
local free_count, free_since = 0, 0
for k = 0, n - 1 do
  local l = read_lease(KEYS[1] .. '#' .. k, KEYS[2])
  l.slot = k
  if valid(l, now) and l.owner == me then mine = l end
  if free(l, now) then
    if not first_free then first_free = l end
    free_since = free_count == 0 and l.transition_at or math.min(free_since, l.transition_at)
    free_count = free_count + 1
  elseif not soonest_held or l.transition_at < soonest_held.transition_at then
    soonest_held = l
  end
  if not soonest or l.transition_at < soonest.transition_at then soonest = l end
end
local l = mine or first_free
if not l then return answer(false, soonest, soonest.slot, 0) end
-- FIFO (core/slots.hpp: may_take_free_slot): the live waiters queued before
-- us take the free slots first, until one has stayed free for the timed
-- fallback. Refused, we are shown a lease that ends then (or the held slot
-- that frees sooner): we sleep until it unless a release wakes us.
if not mine and now < free_since + k_slot_fallback_ms and
   live_ahead(KEYS[1], me, free_count) >= free_count then
  local shown = soonest_held
  if not shown or shown.transition_at > free_since + k_slot_fallback_ms then
    shown = m -- the marker goes when every slot is free: say N all the same
    shown.owner = '#slots:' .. n
    shown.transition_at = free_since + k_slot_fallback_ms
  end
  shown.ttl_at = math.min(shown.ttl_at, shown.transition_at)
  return answer(false, shown, shown.slot or 0, 0)
end
local hash = KEYS[1] .. '#' .. l.slot
if not mine then
  if till then return answer(false, quarantined(l, now, till), l.slot, 0) end
  local queue = KEYS[1] .. ':waiters'
  local score = redis.call('ZSCORE', queue, member(me, ARGV[2], ARGV[3])) or
                redis.call('ZSCORE', queue, me)
  if l.owner ~= '' then
    history(KEYS[1], {e = 'expired', at = int(l.transition_at), o = l.owner, t = int(l.token),
                      hd = int(l.transition_at - l.acquired_at)})
    if not l.holding and not loss_counted(hash, l) then count(KEYS[1], 'losses') end
  end
  count(KEYS[1], 'acquisitions')
  redis.call('ZREM', queue, member(me, ARGV[2], ARGV[3]), me)
  forget_waiter(KEYS[1], me)
  local last = fence_value(KEYS[2])
  l.token = redis.call('INCRBY', KEYS[2], int(math.max(1, now_us - last)))
  l.owner = me
  l.acquired_at = now
  history(KEYS[1], {e = 'acquired', at = int(now), o = me, h = ARGV[5] or '', t = int(l.token),
                    w = waited(score, now)})
  if recorded == 0 then redis.call('HSET', KEYS[1], 'acquired_at', int(now)) end
  redis.call('HSET', KEYS[1], 'owner', '#slots:' .. n, 'token', int(l.token))
end
renew(hash, l, now, ttl, transition)
if not mine then set_holder(hash, l.token, ARGV[5]) end
cover(KEYS[1], KEYS[2], now)
return answer(true, l, l.slot, 0)
