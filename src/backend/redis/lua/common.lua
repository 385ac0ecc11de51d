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
                       'holding', 'handed', 'len')
  if not f[1] then
    return {owner = '', acquired_at = 0, ttl_at = 0, transition_at = 0, token = fence_value(fence)}
  end
  return {owner = f[1], acquired_at = tonumber(f[2]) or 0, ttl_at = tonumber(f[3]) or 0,
          transition_at = tonumber(f[4]) or 0, token = tonumber(f[5]) or 0, holding = f[6] == '1',
          handed = f[7] == '1', len = tonumber(f[8])}
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

-- The server run (DESIGN §9, docs/safety.md). Redis may lose a lease
-- whose owner's CMD still runs: a restart from a snapshot or an AOF that
-- missed the last writes, a failover to a replica that missed them, a
-- FLUSHALL or FLUSHDB. The marker KEYS[3], a hash that nothing expires or
-- evicts, holds the run_id of the server run that last granted a lease in
-- this database (run), the end of the quarantine in force (until, ms), and
-- the longest lease (ttl + transition) that may still run (longest, ms)
-- with the moment every lease of that length granted or renewed so far
-- runs out unless renewed again (longest_end, ms). A marker that is
-- missing (a fresh or flushed database) or of another run (a restart, with
-- or without persistence, or a promoted replica, which has a run_id of its
-- own) means a lease may have been lost: no new lease is granted for the
-- longer of the longest lease noted and the one asked for, + 1 s from that
-- moment, long enough for any lost lease's owner to have stopped its CMD.
--
-- The longest ages out with its leases (issue 36: a longest that only
-- grew made one long lease quarantine every mutex after every restart):
-- every grant and renewal notes its length (note_lease, from renew), and
-- a shorter one takes its place once longest_end has passed or a lease of
-- that length is released (note_end); other live leases of that length
-- are noted again at their next renewal. What a lost write may hide is
-- then covered by the lease asked for: the contenders of a mutex ask for
-- the same terms (docs/safety.md), so a lease granted after the
-- last write that persisted is as long as the one its mutex's next
-- contender asks for. In the steady state this is one HMGET and one HSET
-- of the marker inside the script.
local k_quarantine_slack_ms = 1000

-- A lease of `length` ms ended: released, or renewed shorter (the hold of
-- --min-hold, an extend).
local function note_end(marker, length)
  if SERVER_RUN == '' or not length then return end
  local longest = tonumber(redis.call('HGET', marker, 'longest')) or 0
  if longest > 0 and length >= longest then
    redis.call('HSET', marker, 'longest', '0', 'longest_end', '0')
  end
end

-- A lease of `length` ms was granted or renewed at `now`.
-- `before`: the length it had (nil: a new lease).
local function note_lease(marker, now, length, before)
  if SERVER_RUN == '' then return end -- quarantine=off
  if before and before > length then note_end(marker, before) end
  local m = redis.call('HMGET', marker, 'longest', 'longest_end')
  local longest, ends = tonumber(m[1]) or 0, tonumber(m[2]) or 0
  if length > longest or now >= ends then
    redis.call('HSET', marker, 'longest', int(length), 'longest_end', int(now + length))
  elseif length == longest and now + length > ends then
    redis.call('HSET', marker, 'longest_end', int(now + length))
  end
end

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
    redis.call('HSET', marker, 'run', SERVER_RUN, 'until', int(till), 'longest', int(longest),
               'longest_end', int(now + longest))
  elseif taken_over then
    redis.call('HSET', marker, 'run', SERVER_RUN, 'until', int(till), 'longest', int(known))
  end
  if now < till then return till end
  return nil, till -- and when the last one ended (fifo_since, common_queue.lua)
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

-- Moves the windows forward from now; acquired_at and the token stay. No
-- TTL: see the layout above. `holding`: only the hold of --min-hold sets
-- it; every other write clears it. `handed`: only hand_over sets it (a
-- lease its owner has not claimed yet); the owner's own acquire or guard,
-- being a renewal, clears it (dequeue.lua ends only a handed lease). `len`:
-- the lease's length, noted in the marker KEYS[3] (note_lease).
local function renew(hash, l, now, ttl, transition, holding, handed)
  l.ttl_at = now + ttl
  l.transition_at = l.ttl_at + transition
  l.holding = holding == true
  l.handed = handed == true
  local before = l.len
  l.len = ttl + transition
  redis.call('HSET', hash, 'owner', l.owner, 'acquired_at', int(l.acquired_at),
             'ttl_at', int(l.ttl_at), 'transition_at', int(l.transition_at), 'token', int(l.token),
             'holding', l.holding and '1' or '0', 'handed', l.handed and '1' or '0',
             'len', int(l.len))
  note_lease(KEYS[3], now, l.len, before)
end

-- Channel names: per database, like the keys (PUBLISH is server-wide).
local function channel(hash, suffix)
  return hash .. ':db' .. DB .. ':' .. suffix
end

-- Tells a revoked owner (and whoever listens) on the mutex's channel.
local function notify(hash)
  redis.call(PUBLISH, channel(hash, 'released'), '1')
end
