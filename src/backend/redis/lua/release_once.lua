-- release_once: KEYS = hash, fence, marker; ARGV = contender, token,
-- exit_code. release.lua's rule, and in the same script the done record of
-- the run that ends (the one with its token) gets the exit code and the
-- time. No hand-over: every waiter is woken ('released') to look, for each
-- must learn from its own acquire_once that the window is done. The reply
-- is release's followed by the record.
local now = clock()
local l = read_lease(KEYS[1], KEYS[2])
local token = tonumber(ARGV[2])
local once = KEYS[1] .. ':once'
local rec = read_once(once)
if not valid(l, now) or l.owner ~= ARGV[1] or (token ~= 0 and l.token ~= token) then
  return once_reply(now, false, l, rec)
end
ended(KEYS[1], l, now, 'released', ARGV[3])
note_end(KEYS[3], l.len) -- the longest lease may age out (common.lua)
if rec and rec.token == l.token then
  rec.finished = true
  rec.exit_code = tonumber(ARGV[3])
  rec.finished_at = now
  write_once(once, rec)
end
end_lease_now(KEYS[1], l, now)
notify(KEYS[1])
return once_reply(now, true, l, rec)
