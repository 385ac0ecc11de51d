-- acquire_once: KEYS = hash, fence, marker; ARGV = contender, ttl_ms,
-- transition_ms, period_ms, offset_ms, retry_failed ('1'), label, host,
-- holder (backend/holder.hpp: written with a new lease; '' none), window
-- (the contender's: core::OncePer::window; '0': the one holding now).
-- --once-per (core/once_per.hpp; the rules are mirrored in common_once.lua,
-- keep them alike): acquire.lua's rule, but a new lease is taken only if
-- the contender's window (else the one holding the server's now) may run
-- (a late run records that window; a later window's record refuses),
-- judged from the done record
-- <hash>:once, and the new lease writes the record of its run (unfinished)
-- in the same script. A lease of ours without a record of its own (handed
-- over by a plain release) is judged too, and ended if the window may not
-- run. A record of other terms (--once-per, --offset) whose window lasts
-- refuses the same way (terms_differ; simba then exits 64). The reply is
-- acquire's followed by the record (once_reply).
local now, now_us = clock()
local l = read_lease(KEYS[1], KEYS[2])
local me = ARGV[1]
local ttl, transition = tonumber(ARGV[2]), tonumber(ARGV[3])
local once = KEYS[1] .. ':once'
local rec = read_once(once)
local period, offset = tonumber(ARGV[4]), tonumber(ARGV[5])
local window = tonumber(ARGV[10]) or 0
if window == 0 then window = window_start(now, period, offset) end
local function may_run()
  if terms_differ(rec, now, period, offset) then return false end
  local state = judge_window(rec, {owner = '', transition_at = 0}, now, window)
  return state == 'open' or (state == 'failed' and ARGV[6] == '1')
end
local function start_record()
  rec = {window = window, label = ARGV[7], host = ARGV[8], token = l.token, started_at = now,
         finished = false, exit_code = 0, finished_at = 0, period = period, offset = offset}
  write_once(once, rec)
end
if not free(l, now) then
  quarantine_end(KEYS[3], now, ttl + transition) -- starts one if due (common.lua)
  if not valid(l, now) or l.owner ~= me then
    return once_reply(now, false, l, rec)
  end
  if not (rec and rec.token == l.token) then
    if not may_run() then
      end_lease_now(KEYS[1], l, now)
      notify(KEYS[1])
      return once_reply(now, true, l, rec)
    end
    start_record()
  end
  -- a renewal: acquired_at and the token stay
else
  if not may_run() then
    return once_reply(now, false, l, rec)
  end
  local till, ended = quarantine_end(KEYS[3], now, ttl + transition)
  if till then
    return once_reply(now, false, quarantined(l, now, till), rec)
  end
  local since = fifo_since(l, now, ended) -- FIFO, as acquire.lua
  if fifo_refuses(KEYS[1], me, since, now) then
    return once_reply(now, false, fifo_refusal(l, since), rec)
  end
  take_new_lease(KEYS[1], KEYS[2], l, me, ARGV[2], ARGV[3], now, now_us, ARGV[9])
  start_record()
  renew(KEYS[1], l, now, ttl, transition)
  set_holder(KEYS[1], l.token, ARGV[9])
  return once_reply(now, true, l, rec)
end
renew(KEYS[1], l, now, ttl, transition)
return once_reply(now, true, l, rec)
