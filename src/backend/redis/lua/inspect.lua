-- inspect (status): KEYS = marker, hash1, fence1, hash2, fence2, ... Reads
-- only. One clock for all: {now, then per mutex the lease (7 fields: owner,
-- acquired_at, ttl_at, transition_at, token, quarantine, holding), its holder ('' when none is stored for this token), the
-- number of waiters n, and n times: member, queued at (ms), holder (''),
-- gives up at (ms, 0: never or not said),
-- the number of slots N (0: a plain mutex) and N times: the lease (7 fields)
-- and holder, then its counters: acquisitions, losses (common.lua: count)}.
-- Waiters in queue order (the sorted set's, by the time they queued).
local now = clock()
local till = quarantine_seen(KEYS[1], now)
local out = {now}
for i = 2, #KEYS, 2 do
  local l = read_lease(KEYS[i], KEYS[i + 1])
  if till and free(l, now) then quarantined(l, now, till) end
  out[#out + 1] = l.owner
  out[#out + 1] = l.acquired_at
  out[#out + 1] = l.ttl_at
  out[#out + 1] = l.transition_at
  out[#out + 1] = l.token
  out[#out + 1] = l.quarantine and 1 or 0
  out[#out + 1] = l.holding and 1 or 0
  local h = redis.call('HMGET', KEYS[i], 'holder', 'holder_token')
  out[#out + 1] = (h[1] and tonumber(h[2]) == l.token) and h[1] or ''
  local queue = redis.call('ZRANGE', KEYS[i] .. ':waiters', 0, -1, 'WITHSCORES')
  out[#out + 1] = #queue / 2
  for j = 1, #queue, 2 do
    local w = string.match(queue[j], '^%d+ %d+ (.+)$') or queue[j]
    out[#out + 1] = w
    out[#out + 1] = math.floor(tonumber(queue[j + 1]) / 1000)
    out[#out + 1] = redis.call('HGET', KEYS[i] .. ':who', w) or ''
    out[#out + 1] = tonumber(redis.call('HGET', KEYS[i] .. ':until', w)) or 0
  end
  -- --slots N (common.lua: Slots): N, then each slot's lease and holder.
  local n = slots_of(l.owner)
  if n < 2 then n = 0 end
  out[#out + 1] = n
  for k = 0, n - 1 do
    local hash = KEYS[i] .. '#' .. k
    local s = read_lease(hash, KEYS[i + 1])
    for _, v in ipairs({s.owner, s.acquired_at, s.ttl_at, s.transition_at, s.token, 0,
                        s.holding and 1 or 0}) do
      out[#out + 1] = v
    end
    local sh = redis.call('HMGET', hash, 'holder', 'holder_token')
    out[#out + 1] = (sh[1] and tonumber(sh[2]) == s.token) and sh[1] or ''
  end
  local c = redis.call('HMGET', KEYS[i] .. ':counts', 'acquisitions', 'losses')
  out[#out + 1] = tonumber(c[1]) or 0
  out[#out + 1] = tonumber(c[2]) or 0
end
return out
