-- Prepended to every script at build time (cmake/embed_lua.cmake).
--
-- Layout (DESIGN §5.2): KEYS[1] = <prefix>{<mutex>}, a hash with the fields
-- owner, acquired_at, ttl_at, transition_at, token, holding ('1': the lease
-- is only kept for --min-hold, core::Lease::holding), holder and
-- holder_token (who took the lease with that token: backend/holder.hpp;
-- written only by the acquisition, so shown only while the tokens match);
-- KEYS[2] =
-- <prefix>{<mutex>}:fence, the fencing counter; KEYS[3] = simba:server, the
-- database's marker (see "The server run" below). None of them has a TTL:
-- the scripts compare transition_at, and a key without a TTL is never taken
-- by expiry nor by a volatile-* eviction policy. A missing hash is a free
-- mutex whose last token is the counter's value; a hash with an empty owner
-- is a revoked lease (a forced release), free at its transition_at. Every
-- script answers
--   {now_ms, changed, owner, acquired_at, ttl_at, transition_at, token, quarantine, holding}
-- with the lease after the call and the server's clock: TIME only, never a
-- client's clock.
--
-- The client appends three arguments to every script, taken off ARGV here
-- so that each script sees only its own: the history limit (see history()
-- below), the database number (channels are
-- server-wide, so their names carry it) and the run_id of the server its
-- connection talks to ("" with quarantine=off), from the INFO it sent when
-- it connected ('?': see below).
--
-- Redis Cluster (redis/cluster_route.hpp): a command's declared keys must
-- all hash to one slot, and the node's marker (KEYS[3] or KEYS[1]) lives in
-- a slot of its own, as do the mutexes one listing reads. So the client
-- declares only keys of the mutex's slot (they route the call) and sends
-- the keys this script reads last of all, with "+keys <n> <m>" after them:
-- they become KEYS here, but for the last m, the node's earlier markers
-- (MARKERS_BEFORE, see quarantine_end). A script without a shebang line may
-- touch any key of a slot the node serves. Otherwise the last argument is
-- the server run ('' or hex digits), never "+keys".
-- In a cluster the wake-ups go by sharded pub/sub, to the slot's own node
-- only (wakeups.cpp: SSUBSCRIBE there), so PUBLISH counts every listener
-- that gets the message: a grant nobody counted is never delivered.
local PUBLISH = 'PUBLISH'
local MARKERS_BEFORE = {}
do
  local moved, before = string.match(ARGV[#ARGV] or '', '^%+keys (%d+) (%d+)$')
  if moved then
    moved, before = tonumber(moved), tonumber(before)
    table.remove(ARGV)
    local keys = {}
    for i = #ARGV - moved + 1, #ARGV do keys[#keys + 1] = ARGV[i] end
    for _ = 1, moved do table.remove(ARGV) end
    for i = #KEYS, 1, -1 do KEYS[i] = nil end
    for i, k in ipairs(keys) do
      if i <= moved - before then KEYS[i] = k else MARKERS_BEFORE[#MARKERS_BEFORE + 1] = k end
    end
    PUBLISH = 'SPUBLISH'
  end
end
local SERVER_RUN = table.remove(ARGV)
local DB = table.remove(ARGV)
local HISTORY_LIMIT = tonumber(table.remove(ARGV)) or 0

-- The first script of a connection may come in the same write as the
-- connection's INFO (server_check.hpp: hello_can_wait()), before the
-- client knows the server's run: it then sends '?', and the script asks
-- INFO itself. It also refuses, before any write, what the client refuses
-- when it reads that INFO: a server that may evict a lease (allkeys-*).
if SERVER_RUN == '?' then
  SERVER_RUN = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
  local policy = string.match(redis.call('INFO', 'memory'), 'maxmemory_policy:(%S+)')
  if not SERVER_RUN or not policy or string.sub(policy, 1, 8) == 'allkeys-' then
    return redis.error_reply('SIMBA refused: no run_id, or an eviction policy that may evict a lease')
  end
end

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
  local f = redis.call('HMGET', hash, 'owner', 'acquired_at', 'ttl_at', 'transition_at', 'token',
                       'holding', 'handed')
  if not f[1] then
    return {owner = '', acquired_at = 0, ttl_at = 0, transition_at = 0, token = fence_value(fence)}
  end
  return {owner = f[1], acquired_at = tonumber(f[2]) or 0, ttl_at = tonumber(f[3]) or 0,
          transition_at = tonumber(f[4]) or 0, token = tonumber(f[5]) or 0, holding = f[6] == '1',
          handed = f[7] == '1'}
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
  return {now, changed and 1 or 0, l.owner, l.acquired_at, l.ttl_at, l.transition_at, l.token,
          l.quarantine and 1 or 0, l.holding and 1 or 0}
end

-- Moves the windows forward from now; acquired_at and the token stay. No
-- TTL: see the layout above. `holding`: only the hold of --min-hold sets
-- it; every other write clears it. `handed`: only hand_over sets it (a
-- lease its owner has not claimed yet); the owner's own acquire or guard,
-- being a renewal, clears it (dequeue.lua ends only a handed lease).
local function renew(hash, l, now, ttl, transition, holding, handed)
  l.ttl_at = now + ttl
  l.transition_at = l.ttl_at + transition
  l.holding = holding == true
  l.handed = handed == true
  redis.call('HSET', hash, 'owner', l.owner, 'acquired_at', int(l.acquired_at),
             'ttl_at', int(l.ttl_at), 'transition_at', int(l.transition_at), 'token', int(l.token),
             'holding', l.holding and '1' or '0', 'handed', l.handed and '1' or '0')
end

-- Channel names: per database, like the keys (PUBLISH is server-wide).
local function channel(hash, suffix)
  return hash .. ':db' .. DB .. ':' .. suffix
end

-- Tells a revoked owner (and whoever listens) on the mutex's channel.
local function notify(hash)
  redis.call(PUBLISH, channel(hash, 'released'), '1')
end

-- The server run (DESIGN §9, README "Safety model"). Redis may lose a lease
-- whose owner's CMD still runs: a restart from a snapshot or an AOF that
-- missed the last writes, a failover to a replica that missed them, a
-- FLUSHALL or FLUSHDB. The marker KEYS[3], a hash that nothing expires or
-- evicts, holds the run_id of the server run that last granted a lease in
-- this database (run), the end of the quarantine in force (until, ms) and
-- the longest lease (ttl + transition) asked for since it was written
-- (longest, ms). A marker that is missing (a fresh or flushed database) or
-- of another run (a restart, with or without persistence, or a promoted
-- replica, which has a run_id of its own) means a lease may have been lost:
-- no new lease is granted for the longest lease known + 1 s from that
-- moment, long enough for any lost lease's owner to have stopped its CMD.
-- In the steady state this is one HMGET inside the script.
local k_quarantine_slack_ms = 1000

-- The end of the quarantine in force at `now` for a lease of `lease_ms`,
-- or nil; starts one when a loss shows. Called by every acquire, also of a
-- mutex that is held (its answer then unused): the quarantine starts at the
-- first acquire that sees a new server run. Started only once the mutex
-- was free, a holder that outlived the restart and died later was followed
-- after its lease's end and then the whole quarantine. Any moment after
-- the restart is a safe start: every lease the lost run granted was
-- renewed before it. After a Sentinel failover the old master may still
-- grant or renew after that moment, but only for clients that a majority
-- of the sentinels sent there at most 0.5 s before it, which the slack
-- covers (sentinel.hpp).
--
-- In a cluster each master has its marker in the lowest slot it serves; a
-- resharding may change which slot that is. The client then also names
-- the keys where the node's marker may have been before (the first and
-- last slot of each range the node serves: MARKERS_BEFORE); one of this
-- server run is taken over, so that a resharding starts no quarantine.
-- Returns the marker's fields, and whether they came from another key.
local function read_marker(marker)
  local m = redis.call('HMGET', marker, 'run', 'until', 'longest')
  if m[1] == SERVER_RUN then return m, false end
  for _, before in ipairs(MARKERS_BEFORE) do
    local b = redis.call('HMGET', before, 'run', 'until', 'longest')
    if b[1] == SERVER_RUN then return b, true end
  end
  return m, false
end

local function quarantine_end(marker, now, lease_ms)
  if SERVER_RUN == '' then return nil end -- quarantine=off
  local m, taken_over = read_marker(marker)
  local known = tonumber(m[3]) or 0
  local longest = math.max(known, lease_ms)
  local till = tonumber(m[2]) or 0
  if m[1] ~= SERVER_RUN then
    till = math.max(till, now + longest + k_quarantine_slack_ms)
    redis.call('HSET', marker, 'run', SERVER_RUN, 'until', int(till), 'longest', int(longest))
  elseif taken_over then
    redis.call('HSET', marker, 'run', SERVER_RUN, 'until', int(till), 'longest', int(longest))
  elseif longest > known then
    redis.call('HSET', marker, 'longest', int(longest))
  end
  if now < till then return till end
  return nil
end

-- What quarantine_end would answer, without writing (get, list).
local function quarantine_seen(marker, now)
  if SERVER_RUN == '' then return nil end
  local m = read_marker(marker)
  local till = tonumber(m[2]) or 0
  if m[1] ~= SERVER_RUN then
    till = math.max(till, now + (tonumber(m[3]) or 0) + k_quarantine_slack_ms)
  end
  if now < till then return till end
  return nil
end

-- A free mutex shown as quarantined until `till`: no owner, not free before
-- then (so waiters sleep until it ends), and flagged for status.
local function quarantined(l, now, till)
  l.owner = ''
  l.ttl_at = now
  l.transition_at = math.max(l.transition_at, till)
  l.quarantine = true
  return l
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
-- HINCRBY: the commands of README "ACL users" suffice.
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
  redis.call('HDEL', hash .. ':who', me)
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
        redis.call('HDEL', hash .. ':who', w)
        return true
      end
      -- Nobody listened: the lease written above is the next candidate's
      -- to overwrite, or the caller's to delete.
      last = l.token
    end
    redis.call('ZREM', queue, first[1])
    redis.call('HDEL', hash .. ':who', w)
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
      redis.call('HDEL', hash .. ':who', w)
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
      redis.call('HDEL', hash .. ':who', w)
    end
  end
end
