-- Prepended to every script at build time (cmake/embed_lua.cmake).
--
-- Layout (DESIGN §5.2): KEYS[1] = <prefix>{<mutex>}, a hash with the fields
-- owner, acquired_at, ttl_at, transition_at, token that expires at
-- transition_at; KEYS[2] = <prefix>{<mutex>}:fence, the fencing counter,
-- which never expires. A missing hash is a free mutex whose last token is the
-- counter's value; a hash with an empty owner is a revoked lease (a forced
-- release), free at its transition_at. Every script answers
--   {now_ms, changed, owner, acquired_at, ttl_at, transition_at, token}
-- with the lease after the call and the server's clock: TIME only, never a
-- client's clock.

-- The server's clock: epoch milliseconds (lease times) and microseconds
-- (fence seeds).
local function clock()
  local t = redis.call('TIME')
  local sec, usec = tonumber(t[1]), tonumber(t[2])
  return sec * 1000 + math.floor(usec / 1000), sec * 1000000 + usec
end

-- Numbers go to redis.call as decimal integers: Lua's own conversion may
-- write large ones in exponent notation.
local function int(x)
  return string.format('%d', x)
end

local function fence_value(fence)
  return tonumber(redis.call('GET', fence) or '0')
end

local function read_lease(hash, fence)
  local f = redis.call('HMGET', hash, 'owner', 'acquired_at', 'ttl_at', 'transition_at', 'token')
  if not f[1] then
    return {owner = '', acquired_at = 0, ttl_at = 0, transition_at = 0, token = fence_value(fence)}
  end
  return {owner = f[1], acquired_at = tonumber(f[2]) or 0, ttl_at = tonumber(f[3]) or 0,
          transition_at = tonumber(f[4]) or 0, token = tonumber(f[5]) or 0}
end

-- DESIGN §2: a lease is valid while transition_at has not passed.
local function valid(l, now)
  return l.owner ~= '' and now < l.transition_at
end

-- Anyone may acquire once transition_at has passed; a revoked lease (a
-- forced release: no owner, transition_at kept) is not free before that, so
-- that the revoked owner's CMD is surely stopped first (core/lease.hpp).
local function free(l, now)
  return now >= l.transition_at
end

local function reply(now, changed, l)
  return {now, changed and 1 or 0, l.owner, l.acquired_at, l.ttl_at, l.transition_at, l.token}
end

-- Moves the windows forward from now; acquired_at and the token stay.
local function renew(hash, l, now, ttl, transition)
  l.ttl_at = now + ttl
  l.transition_at = l.ttl_at + transition
  redis.call('HSET', hash, 'owner', l.owner, 'acquired_at', int(l.acquired_at),
             'ttl_at', int(l.ttl_at), 'transition_at', int(l.transition_at), 'token', int(l.token))
  redis.call('PEXPIREAT', hash, int(l.transition_at))
end

-- Tells a revoked owner (and whoever listens) on the mutex's channel.
local function notify(hash)
  redis.call('PUBLISH', hash .. ':released', '1')
end

-- The waiters' queue: <hash>:waiters, a sorted set scored by the server's
-- time when each waiter queued. A member is "<ttl_ms> <transition_ms>
-- <contender>": the terms the waiter asked for, and its id (see member()).
-- A release hands the mutex over to the first waiter that still listens on
-- its own channel <hash>:wake:<contender> (PUBLISH counts the listeners);
-- the dead ones are dropped on the way. One waiter per release: no
-- thundering herd.
--
-- The hand-over makes that waiter the owner at once, with the lease its own
-- acquire would get now, and the wake-up message carries what that acquire
-- would answer: "grant <now> <acquired_at> <ttl_at> <transition_at>
-- <token>". The waiter starts CMD without a round trip of its own; it counts
-- the lease from when it sent its SUBSCRIBE, whose confirmation reached it
-- before this message and so was sent before this script ran (the one rule
-- of DESIGN §4: a local time no later than the backend's `now`). A member
-- without terms (queued by an older simba) is only woken ("1"): it acquires
-- itself. `last` is the token of the lease that ends: the fence's value
-- (every new lease sets both). `skip`: a contender that is not to get it.
-- Returns true when the mutex has a new owner.
local function member(contender, ttl, transition)
  return ttl .. ' ' .. transition .. ' ' .. contender
end

local function hand_over(hash, fence, now, now_us, last, skip)
  local queue = hash .. ':waiters'
  for _ = 1, 32 do
    local first = redis.call('ZRANGE', queue, 0, 0)
    if #first == 0 then return false end
    local ttl, transition, w = string.match(first[1], '^(%d+) (%d+) (.+)$')
    if not ttl then w = first[1] end
    local channel = hash .. ':wake:' .. w
    if w == skip then
      -- not a waiter (should its own dequeue have failed)
    elseif not ttl then
      if redis.call('PUBLISH', channel, '1') > 0 then return false end
    else
      local l = {owner = w, acquired_at = now, token = last + math.max(1, now_us - last)}
      l.ttl_at = now + tonumber(ttl)
      l.transition_at = l.ttl_at + tonumber(transition)
      local msg = table.concat({'grant', int(now), int(l.acquired_at), int(l.ttl_at),
                                int(l.transition_at), int(l.token)}, ' ')
      if redis.call('PUBLISH', channel, msg) > 0 then
        redis.call('SET', fence, int(l.token))
        renew(hash, l, now, tonumber(ttl), tonumber(transition))
        redis.call('ZREM', queue, first[1])
        return true
      end
    end
    redis.call('ZREM', queue, first[1])
  end
  return false
end
