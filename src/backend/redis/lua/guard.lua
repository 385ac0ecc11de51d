-- guard: KEYS = hash, fence; ARGV = contender, ttl_ms, transition_ms, token
-- [, '1': the hold of --min-hold]. Renews the valid owner's lease, only the
-- one with that fencing token (a compare-and-set on owner and token); never
-- creates one. A hold marks the lease as only held (common.lua: renew).
local now = clock()
local l = read_lease(KEYS[1], KEYS[2])
if not valid(l, now) or l.owner ~= ARGV[1] or l.token ~= tonumber(ARGV[4]) then
  return reply(now, false, l)
end
renew(KEYS[1], l, now, tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[5] == '1')
return reply(now, true, l)
