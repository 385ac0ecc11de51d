-- history: KEYS = hash1, hash2, ...; ARGV = since (epoch ms). Reads only.
-- {now, then per mutex: n, and its n JSON entries at or after `since`,
-- oldest first} (common.lua: history).
local now = clock()
local since = tonumber(ARGV[1])
local out = {now}
for i = 1, #KEYS do
  local entries = redis.call('LRANGE', KEYS[i] .. ':history', 0, -1)
  local kept = {}
  for j = #entries, 1, -1 do
    local at = tonumber(string.match(entries[j], '"at":"(%d+)"'))
    if not at or at >= since then kept[#kept + 1] = entries[j] end
  end
  out[#out + 1] = #kept
  for _, e in ipairs(kept) do out[#out + 1] = e end
end
return out
