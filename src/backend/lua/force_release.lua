-- force_release: KEYS = hash, fence; ARGV = token (0: any). Admin
-- break-lock of the valid lease (only the one with that fencing token),
-- as a revocation: the owner goes at once (its guard sees no owner and stops
-- CMD; the notification tells it sooner), but transition_at stays, so that
-- nobody else acquires before the revoked owner's CMD is surely stopped.
-- The hash keeps expiring at transition_at.
local now = clock()
local l = read_lease(KEYS[1], KEYS[2])
local token = tonumber(ARGV[1])
if not valid(l, now) or (token ~= 0 and l.token ~= token) then
  return reply(now, false, l)
end
l.ttl_at = math.min(l.ttl_at, now)
l.owner = ''
redis.call('HSET', KEYS[1], 'owner', '', 'ttl_at', int(l.ttl_at))
notify(KEYS[1])
return reply(now, true, l)
