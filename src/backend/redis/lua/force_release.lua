-- force_release: KEYS = hash, fence, marker; ARGV = token (0: any)[, who
-- forces it (backend/holder.hpp), for the history[, 'owner': release
-- --lease, a lease only held then ends as a release: event 'released', no
-- loss]]. Admin
-- break-lock of the valid lease (only the one with that fencing token).
-- A lease whose CMD may still run is revoked: the owner goes at once (its
-- guard sees no owner and stops CMD; the notification tells it sooner), but
-- transition_at stays, so that nobody else acquires before the revoked
-- owner's CMD is surely stopped. A lease only held for --min-hold (nothing
-- runs under it) ends at once, like a release: the mutex goes to the first
-- live waiter (common.lua: hand_over), or the hash goes.
local now, now_us = clock()
local l = read_lease(KEYS[1], KEYS[2])
local token = tonumber(ARGV[1])
if not valid(l, now) or (token ~= 0 and l.token ~= token) then
  return reply(now, false, l)
end
local mutex = marker_of(KEYS[1]) -- a slot (common.lua: Slots)
if ARGV[3] == 'owner' and l.holding then
  ended(mutex or KEYS[1], l, now, 'released', nil, nil)
else
  ended(mutex or KEYS[1], l, now, 'forced', nil, ARGV[2])
  if not loss_counted(KEYS[1], l) then count(mutex or KEYS[1], 'losses') end
end
if mutex and l.holding then
  free_slot_now(KEYS[1], l, now)
  wake_waiter(mutex, cover(mutex, KEYS[2], now))
  return reply(now, true, l)
end
if l.holding then
  if hand_over(KEYS[1], KEYS[2], KEYS[3], now, now_us, l.token, l.owner) then
    return reply(now, true, read_lease(KEYS[1], KEYS[2]))
  end
  end_lease_now(KEYS[1], l, now)
  return reply(now, true, l)
end
l.ttl_at = math.min(l.ttl_at, now)
l.owner = ''
redis.call('HSET', KEYS[1], 'owner', '', 'ttl_at', int(l.ttl_at))
notify(mutex or KEYS[1])
return reply(now, true, l)
