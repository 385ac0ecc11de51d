-- list: KEYS = marker, hash1, fence1, hash2, fence2, ... (the client finds
-- the names with SCAN). One clock for all: {now, owner1, acquired_at1,
-- ttl_at1, transition_at1, token1, quarantine1, holding1, owner2, ...}.
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
end
return out
