-- Prepended to every script after common.lua (cmake/embed_lua.cmake): the
-- waiters' queue, the hand-over, the history and counters, and --slots.
--
-- A waiter's entries beside the queue: its holder in <hash>:who, its give-up
-- time in <hash>:until (enqueue.lua); they go when it leaves the queue.
local function forget_waiter(hash, w)
  redis.call('HDEL', hash .. ':who', w)
  redis.call('HDEL', hash .. ':until', w)
end

-- The waiters' queue: <hash>:waiters, a sorted set scored by the server's
-- time when each waiter queued. A member is "<ttl_ms> <transition_ms>
-- <contender>": the terms the waiter asked for, and its id (see member()).
-- A release hands the mutex over to the first waiter that still listens on
-- its own channel <hash>:db<N>:wake:<contender> (PUBLISH counts the listeners);
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

-- `me` becomes the owner of a new lease (`l` then shows it): out of the
-- waiters' queue first, queued with `ttl` and `transition` (the new owner
-- waits no more) -- a key of the wrong type fails here, before the fence
-- moves (a failing script keeps the writes it made) -- then a new token:
-- above the last one, and never below the clock in microseconds, so that
-- tokens keep increasing when a restart lost the counter (or restored an
-- older snapshot of it). The caller writes the lease (renew).
-- The history (backend.hpp: Backend::history): <hash>:history, a list of
-- JSON entries, newest first, each pushed by the script of its event and
-- trimmed there to the last HISTORY_LIMIT (SIMBA_HISTORY_LIMIT of the
-- writer; 0: none written). No TTL, like the hash. Numbers go as strings
-- (cjson writes 14 digits: a token has 16). "expired" is written by the
-- acquisition that finds a lease run out unreleased.
local function history(hash, e)
  if HISTORY_LIMIT <= 0 then return end
  redis.call('LPUSH', hash .. ':history', cjson.encode(e))
  redis.call('LTRIM', hash .. ':history', 0, HISTORY_LIMIT - 1)
end

-- A lease that ends: released (with CMD's exit code, '' when unknown) or
-- forced (`by`: who forced it).
local function ended(hash, l, now, event, exit_code, by)
  history(hash, {e = event, at = int(now), o = l.owner, h = by or '', t = int(l.token),
                 hd = int(now - l.acquired_at), x = exit_code or ''})
end

-- The mutex's counters (backend.hpp: MutexLease): <hash>:counts, a hash
-- (acquisitions, losses) that no script deletes and that has no TTL, like
-- the fence: the lease's own hash goes with every release. `hash` is the
-- mutex's (a slot's lease counts in its mutex's). HGET and HSET, not
-- HINCRBY: the commands of README and docs/backends/redis.md "ACL users" suffice.
local function count(hash, field)
  local key = hash .. ':counts'
  redis.call('HSET', key, field, int((tonumber(redis.call('HGET', key, field)) or 0) + 1))
end

-- Whether a loss of the lease `l` in the lease hash `lease_hash` (a slot's
-- own) was counted already: its holder's lost event counted it while it
-- still stood, and noted its token there (lost.lua).
local function loss_counted(lease_hash, l)
  return tonumber(redis.call('HGET', lease_hash, 'lost_token')) == l.token
end

-- How long a waiter queued at `score` (microseconds) has waited at `now`.
local function waited(score, now)
  if not score then return '0' end
  return int(math.max(0, now - math.floor(tonumber(score) / 1000)))
end

-- The holder of a new lease with token `token` ('' or nil: none given).
local function set_holder(hash, token, holder)
  if holder and holder ~= '' then
    redis.call('HSET', hash, 'holder', holder, 'holder_token', int(token))
  end
end

-- `holder` of the new lease is set by the caller (set_holder) once the
-- lease is written; its entry in <hash>:who (a waiter's holder, see
-- enqueue.lua) goes here.
local function take_new_lease(hash, fence, l, me, ttl, transition, now, now_us, holder)
  local queue = hash .. ':waiters'
  local score = redis.call('ZSCORE', queue, member(me, ttl, transition)) or
                redis.call('ZSCORE', queue, me)
  if l.owner ~= '' then
    history(hash, {e = 'expired', at = int(l.transition_at), o = l.owner, t = int(l.token),
                   hd = int(l.transition_at - l.acquired_at)})
    -- A lease only held (--min-hold, simba acquire's) ends so: no loss.
    if not l.holding and not loss_counted(hash, l) then count(hash, 'losses') end
  end
  count(hash, 'acquisitions')
  redis.call('ZREM', queue, member(me, ttl, transition), me)
  forget_waiter(hash, me)
  local last = fence_value(fence)
  l.token = redis.call('INCRBY', fence, int(math.max(1, now_us - last)))
  l.owner = me
  l.acquired_at = now
  history(hash, {e = 'acquired', at = int(now), o = me, h = holder or '', t = int(l.token),
                 w = waited(score, now)})
end

-- The lease ends now, with nobody to hand it to: the hash goes (the fence
-- keeps the token); `l` shows it as the reply does.
local function end_lease_now(hash, l, now)
  redis.call('DEL', hash)
  l.owner = ''
  l.holding = false
  l.ttl_at = math.min(l.ttl_at, now)
  l.transition_at = now
end

local function hand_over(hash, fence, marker, now, now_us, last, skip)
  local queue = hash .. ':waiters'
  for _ = 1, 32 do
    local first = redis.call('ZRANGE', queue, 0, 0, 'WITHSCORES')
    if #first == 0 then return false end
    local ttl, transition, w = string.match(first[1], '^(%d+) (%d+) (.+)$')
    if not ttl then w = first[1] end
    local wake = channel(hash, 'wake:' .. w)
    if w == skip then
      -- not a waiter (should its own dequeue have failed)
    elseif not ttl then
      if redis.call(PUBLISH, wake, '1') > 0 then return false end
    elseif quarantine_end(marker, now, tonumber(ttl) + tonumber(transition)) then
      -- No new lease now: only wake it; its acquire sees the quarantine
      -- and sleeps until it ends.
      if redis.call(PUBLISH, wake, '1') > 0 then return false end
    else
      local l = {owner = w, acquired_at = now, token = last + math.max(1, now_us - last)}
      -- The lease is written before it is published: should a write fail
      -- (OOM under noeviction), the script stops before anyone was told,
      -- and nothing is rolled back in Redis.
      redis.call('SET', fence, int(l.token))
      renew(hash, l, now, tonumber(ttl), tonumber(transition), false, true)
      set_holder(hash, l.token, redis.call('HGET', hash .. ':who', w))
      local msg = table.concat({'grant', int(now), int(l.acquired_at), int(l.ttl_at),
                                int(l.transition_at), int(l.token)}, ' ')
      if redis.call(PUBLISH, wake, msg) > 0 then
        count(hash, 'acquisitions')
        history(hash, {e = 'handed_over', at = int(now), o = w,
                       h = redis.call('HGET', hash .. ':who', w) or '', t = int(l.token),
                       w = waited(first[2], now)})
        redis.call('ZREM', queue, first[1])
        forget_waiter(hash, w)
        return true
      end
      -- Nobody listened: the lease written above is the next candidate's
      -- to overwrite, or the caller's to delete.
      last = l.token
    end
    redis.call('ZREM', queue, first[1])
    forget_waiter(hash, w)
  end
  return false
end

-- Slots (--slots N, core/slots.hpp): slot k of the mutex whose hash is H is
-- the hash H#k (the same hash tag: one Redis Cluster slot), and they share
-- H's fence, so tokens increase across slots. H holds the marker: owner
-- '#slots:N', valid while any slot is. The waiters queue on H.
-- marker_of: H for a slot's hash, nil for a mutex's own hash.
local function marker_of(hash)
  return string.match(hash, '^(.*})#%d+$')
end

-- The N a lease's owner records: 0 none, 1 a plain holder.
local function slots_of(owner)
  if owner == '' then return 0 end
  return tonumber(string.match(owner, '^#slots:(%d+)$')) or 1
end

-- After a write to a slot: the marker `hash` ends with the last valid slot
-- (it goes when none is: the mutex is free, the next acquirer's N wins).
-- Returns how many slots are free.
local function cover(hash, fence, now)
  local n = slots_of(redis.call('HGET', hash, 'owner') or '')
  if n < 2 then return 0 end
  local ttl_at, transition_at, free_slots = now, now, 0
  for k = 0, n - 1 do
    local l = read_lease(hash .. '#' .. k, fence)
    if free(l, now) then
      free_slots = free_slots + 1
    else
      ttl_at = math.max(ttl_at, l.ttl_at)
      transition_at = math.max(transition_at, l.transition_at)
    end
  end
  if free_slots == n then
    redis.call('DEL', hash)
  else
    redis.call('HSET', hash, 'ttl_at', int(ttl_at), 'transition_at', int(transition_at),
               'holding', '0')
  end
  return free_slots
end

-- FIFO across slots (core/slots.hpp: k_slot_fallback_ms, may_take_free_slot).
local k_slot_fallback_ms = 1000

-- Whether the waiter of wake channel `ch` lives: it is told to look, as a
-- release tells it (SPUBLISH in a cluster), and PUBLISH counts who listens (PUBSUB NUMSUB would ask
-- the ACL for one more command). The look does no harm: the waiters asked
-- about are those a free slot is for.
local function alive(ch)
  return redis.call(PUBLISH, ch, '1') > 0
end

-- The live waiters of the mutex `hash` queued before `me` (all of them when
-- `me` is in none), counted up to `limit`. A waiter is live while it listens
-- on its wake channel (it queues only once subscribed; see alive()); the
-- dead ones met on the way leave the queue.
local function live_ahead(hash, me, limit)
  local queue = hash .. ':waiters'
  local live, at = 0, 0
  for _ = 1, limit + 32 do
    if live >= limit then break end
    local one = redis.call('ZRANGE', queue, at, at)
    if #one == 0 then break end
    local w = string.match(one[1], '^%d+ %d+ (.+)$') or one[1]
    if w == me then break end
    if alive(channel(hash, 'wake:' .. w)) then
      live = live + 1
      at = at + 1
    else
      redis.call('ZREM', queue, one[1])
      forget_waiter(hash, w)
    end
  end
  return live
end

-- A slot's lease ends now: the hash stays, without owner, to say since
-- when the slot is free (the FIFO's timed fallback counts from then).
local function free_slot_now(hash, l, now)
  l.owner = ''
  l.holding = false
  l.ttl_at = math.min(l.ttl_at, now)
  l.transition_at = now
  redis.call('HSET', hash, 'owner', '', 'ttl_at', int(l.ttl_at), 'transition_at', int(now),
             'holding', '0')
  redis.call('HDEL', hash, 'holder', 'holder_token')
end

-- A slot freed: one live waiter of the mutex's queue is woken ("1": it
-- acquires itself), the one at place `free_slots` (the ones before it were
-- woken by the releases of the other free slots and are acquiring). The
-- dead ones are dropped on the way.
local function wake_waiter(hash, free_slots)
  local queue = hash .. ':waiters'
  for _ = 1, 32 do
    local at = math.max(0, free_slots - 1)
    local one = redis.call('ZRANGE', queue, at, at)
    if #one == 0 then
      if at == 0 then return end
      free_slots = free_slots - 1
    else
      local _, _, w = string.match(one[1], '^(%d+) (%d+) (.+)$')
      w = w or one[1]
      if redis.call(PUBLISH, channel(hash, 'wake:' .. w), '1') > 0 then return end
      redis.call('ZREM', queue, one[1])
      forget_waiter(hash, w)
    end
  end
end

-- FIFO on the timed paths (core/fifo.hpp: k_fifo_fallback_ms,
-- may_take_freed_lease): a lease that ran out unreleased, or a quarantine
-- that ended, less than the fallback ago, goes to the first live waiter
-- only. `l`: the mutex's lease as read (a hash that exists but is free: it
-- ran out; a released lease leaves no hash), `quarantine_ended`: when the
-- last quarantine ended (quarantine_end's second answer; nil: none).
-- Returns since when the mutex is free, when the gate is due, else nil:
-- a mutex without a hash and out of a quarantine (the uncontended acquire)
-- reads no queue.
local function fifo_since(l, now, quarantine_ended)
  local since = math.max(l.transition_at, quarantine_ended or 0)
  if since > 0 and now < since + k_slot_fallback_ms then return since end
  return nil
end

-- Whether `me` is refused the mutex free since `since` (fifo_since): a live
-- waiter is queued before it. The gate only refuses (DESIGN §2): whoever
-- it lets through gets what acquire's rule gives. alive() tells the first
-- waiter to look, as a release would: its timer may fire later than ours.
local function fifo_refuses(hash, me, since, now)
  return since and now < since + k_slot_fallback_ms and live_ahead(hash, me, 1) >= 1
end

-- What a refused contender is shown: not free before the fallback ends,
-- and nobody's (core::fifo_refusal: the owner whose lease ran out may be
-- the one refused, and must not see that lease valid again).
local function fifo_refusal(l, since)
  l.owner = ''
  l.holding = false
  l.transition_at = math.max(l.transition_at, since + k_slot_fallback_ms)
  l.ttl_at = math.min(l.ttl_at, l.transition_at)
  return l
end
