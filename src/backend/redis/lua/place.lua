-- place: KEYS = hash; ARGV = contender. Reads only. A waiter's place in the
-- queue of waiters for its notice: {position (1: next), length}; not in
-- the queue: {length + 1, length + 1} (it joins last).
local queue = redis.call('ZRANGE', KEYS[1] .. ':waiters', 0, -1)
for i, m in ipairs(queue) do
  if m == ARGV[1] or string.match(m, '^%d+ %d+ (.+)$') == ARGV[1] then
    return {i, #queue}
  end
end
return {#queue + 1, #queue + 1}
