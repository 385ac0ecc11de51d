-- Prepended, after common.lua, to the scripts named *_once (cmake/embed_lua.cmake):
-- what only --once-per needs, so that no other script carries it.
-- --once-per (core/once_per.hpp): the done record <hash>:once, a hash with
-- window, label, host, token, started_at, finished ('1'), exit_code,
-- finished_at, and the run's terms period and offset (0 in a record of an
-- older simba); nil when there is none. Only the *_once scripts read or
-- write it.
local function read_once(key)
  local f = redis.call('HMGET', key, 'window', 'label', 'host', 'token', 'started_at', 'finished',
                       'exit_code', 'finished_at', 'period', 'offset')
  if not f[1] then return nil end
  return {window = tonumber(f[1]), label = f[2] or '', host = f[3] or '',
          token = tonumber(f[4]) or 0, started_at = tonumber(f[5]) or 0, finished = f[6] == '1',
          exit_code = tonumber(f[7]) or 0, finished_at = tonumber(f[8]) or 0,
          period = tonumber(f[9]) or 0, offset = tonumber(f[10]) or 0}
end

local function write_once(key, r)
  redis.call('HSET', key, 'window', int(r.window), 'label', r.label, 'host', r.host,
             'token', int(r.token), 'started_at', int(r.started_at),
             'finished', r.finished and '1' or '0', 'exit_code', int(r.exit_code),
             'finished_at', int(r.finished_at), 'period', int(r.period), 'offset', int(r.offset))
end

-- core::terms_differ: the record's run had another --once-per or --offset
-- and its window lasts at `now` (then no run starts: simba exits 64).
local function terms_differ(r, now, period, offset)
  return r ~= nil and r.period > 0 and (r.period ~= period or r.offset ~= offset) and
         now < r.window + r.period
end

-- floor((now - offset) / period) * period + offset, exact on doubles: the
-- quotient of the float division is corrected by one where it rounded.
local function window_start(now, period, offset)
  local x = now - offset
  local q = math.floor(x / period)
  if q * period > x then
    q = q - 1
  elseif (q + 1) * period <= x then
    q = q + 1
  end
  return q * period + offset
end

-- core::judge_window: 'open', 'ran_ok', 'failed', 'running' or
-- 'passed_over' (a later window's run happened), of `window`.
local function judge_window(r, l, now, window)
  if not r or r.window < window then return 'open' end
  if r.window > window then return 'passed_over' end
  if r.finished then return r.exit_code == 0 and 'ran_ok' or 'failed' end
  if not free(l, now) and l.token == r.token then return 'running' end
  return 'failed'
end

-- reply() followed by the record: has (0/1), window, label, host, token,
-- started_at, finished, exit_code, finished_at, period, offset.
local function once_reply(now, changed, l, r)
  local out = reply(now, changed, l)
  if not r then
    for _, v in ipairs({0, 0, '', '', 0, 0, 0, 0, 0, 0, 0}) do table.insert(out, v) end
    return out
  end
  for _, v in ipairs({1, r.window, r.label, r.host, r.token, r.started_at, r.finished and 1 or 0,
                      r.exit_code, r.finished_at, r.period, r.offset}) do
    table.insert(out, v)
  end
  return out
end
