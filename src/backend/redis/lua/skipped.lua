-- skipped: KEYS = hash, fence; ARGV = contender, token, reason, by, the
-- run's exit code ('' none), held_ms ('' none), waited_ms, holder
-- (backend/holder.hpp). A contender that did not run (backend.hpp:
-- record_skipped): a "skipped" entry in the mutex's history (common.lua:
-- history), nothing else: no lease field or counter changes. A mutex
-- never leased here (no token, not even the fence's) gets nothing.
local now = clock()
local l = read_lease(KEYS[1], KEYS[2])
local mutex = marker_of(KEYS[1]) or KEYS[1]
if l.token > 0 then -- a lease, or the fence of one (read_lease)
  history(mutex, {e = 'skipped', at = int(now), o = ARGV[1], h = ARGV[8] or '', t = ARGV[2],
                  hd = ARGV[6], w = ARGV[7], x = ARGV[5], r = ARGV[3], b = ARGV[4]})
end
return reply(now, false, l)
