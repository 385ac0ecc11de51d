-- guard_mark: KEYS = hash, fence, marker; ARGV = contender, ttl_ms,
-- transition_ms, token, record ('1'). schedule (core/schedule_phase.hpp):
-- guard.lua's rule, and, only if it renewed, the start of the mutex's last
-- run, <hash>:last_run (a string of epoch ms, no TTL: see common.lua), is
-- read and, with record, set to now. The reply is guard's followed by the
-- value before the call (-1: none).
local now = clock()
local l = read_lease(KEYS[1], KEYS[2])
if not valid(l, now) or l.owner ~= ARGV[1] or l.token ~= tonumber(ARGV[4]) then
  local out = reply(now, false, l)
  table.insert(out, -1)
  return out
end
renew(KEYS[1], l, now, tonumber(ARGV[2]), tonumber(ARGV[3]), false)
local key = KEYS[1] .. ':last_run'
local last = tonumber(redis.call('GET', key) or '-1')
if ARGV[5] == '1' then redis.call('SET', key, int(now)) end
local out = reply(now, true, l)
table.insert(out, last)
return out
