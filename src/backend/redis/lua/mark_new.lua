-- mark_new (simba doctor --init, redis/doctor_marker.cpp): marks a
-- database the admin knows is new (docs/backends/redis.md "A database you
-- know is new") as one whose leases this server run granted, so that the
-- first lease waits no quarantine. KEYS[1]: the marker. Only where there is
-- no marker at all (nor, in a cluster, one of this node's earlier ones): a
-- marker of another run is a server that may have lost a lease, one of this
-- run a database simba already uses. Answers {'marked', run}, or
-- {'refused', the run the marker names, this server's run}.
if SERVER_RUN == '' then return {'refused', '', ''} end
local keys = {KEYS[1]}
for _, k in ipairs(MARKERS_BEFORE) do keys[#keys + 1] = k end
for _, k in ipairs(keys) do
  local m = redis.call('HMGET', k, 'run', 'until', 'longest')
  if m[1] or m[2] or m[3] then return {'refused', m[1] or '', SERVER_RUN} end
end
redis.call('HSET', KEYS[1], 'run', SERVER_RUN)
return {'marked', SERVER_RUN}
