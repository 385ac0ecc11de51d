-- guard: KEYS = hash, fence; ARGV = contender, ttl_ms, transition_ms, token
-- [, '1': the hold of --min-hold | 'keep': extend, the mark as it is |
-- 'step': a step's first guard, only of a lease marked as only held].
-- Renews the valid owner's lease, only the one with that fencing token (a
-- compare-and-set on owner and token); never creates one. A hold marks the
-- lease as only held (common.lua: renew).
local now = clock()
local l = read_lease(KEYS[1], KEYS[2])
if not valid(l, now) or l.owner ~= ARGV[1] or l.token ~= tonumber(ARGV[4]) then
  return reply(now, false, l)
end
-- another step of the lease runs (or ended without keeping it): unchanged
if ARGV[5] == 'step' and not l.holding then return reply(now, false, l) end
local ttl, transition, holding = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[5] == '1'
if ARGV[5] == 'keep' then
  if l.holding then
    -- Kept as a hold keeps it: no transition.
    ttl, transition, holding = ttl + transition, 0, true
  else
    -- A step's CMD runs until the windows its own guard got: never shorter.
    local ttl_at = math.max(now + ttl, l.ttl_at)
    transition = math.max(ttl_at + transition, l.transition_at) - ttl_at
    ttl = ttl_at - now
  end
end
renew(KEYS[1], l, now, ttl, transition, holding)
local slots_of_mutex = marker_of(KEYS[1]) -- a slot (common.lua: Slots)
if slots_of_mutex then cover(slots_of_mutex, KEYS[2], now) end
return reply(now, true, l)
