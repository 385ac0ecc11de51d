-- guard: KEYS = hash, fence; ARGV = contender, ttl_ms, transition_ms.
-- Renews the valid owner's lease; never creates one.
local now = clock()
local l = read_lease(KEYS[1], KEYS[2])
if not valid(l, now) or l.owner ~= ARGV[1] then
  return reply(now, false, l)
end
renew(KEYS[1], l, now, tonumber(ARGV[2]), tonumber(ARGV[3]))
return reply(now, true, l)
