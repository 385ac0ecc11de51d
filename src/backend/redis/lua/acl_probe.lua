-- acl_probe (simba doctor, redis/doctor_acl.cpp): may the connected user
-- run, on simba's keys and channels, every command simba's scripts call?
-- Each is tried with redis.pcall, which answers a refusal instead of
-- stopping here. KEYS[1]: a scratch key under the prefix (no mutex has it:
-- doctor_acl.cpp); the hash, sorted set and list tried go to KEYS[1] ..
-- ':h', ':z', ':l', each with a TTL of a minute and deleted again. KEYS[2]:
-- the marker, read, and written only with a field of the probe's own, added
-- and removed in this script (nobody sees it; a marker that was missing is
-- missing again). ARGV[1]: a channel under the prefix that no waiter
-- listens on. Answers {name, refusal, name, refusal, ...}: what was refused
-- (none: {}).
local scratch, marker = KEYS[1], KEYS[2]
local refused = {}
local function try(name, ...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then
    refused[#refused + 1] = name
    refused[#refused + 1] = r.err
    return false
  end
  return true
end
local ttl = '60000'
try('time', 'TIME')
try('info', 'INFO', 'server')
try('set', 'SET', scratch, '1', 'PX', ttl)
try('get', 'GET', scratch)
try('incrby', 'INCRBY', scratch, '0')
try('pexpire', 'PEXPIRE', scratch, ttl)
try('del', 'DEL', scratch)
local h, z, l = scratch .. ':h', scratch .. ':z', scratch .. ':l'
try('hset', 'HSET', h, 'f', '1')
redis.pcall('PEXPIRE', h, ttl)
try('hget', 'HGET', h, 'f')
try('hmget', 'HMGET', h, 'f', 'g')
local hdel = try('hdel', 'HDEL', h, 'f')
try('zadd', 'ZADD', z, '1', 'm')
redis.pcall('PEXPIRE', z, ttl)
try('zrange', 'ZRANGE', z, '0', '-1')
try('zscore', 'ZSCORE', z, 'm')
try('zrem', 'ZREM', z, 'm')
try('lpush', 'LPUSH', l, 'x')
redis.pcall('PEXPIRE', l, ttl)
try('lrange', 'LRANGE', l, '0', '-1')
try('ltrim', 'LTRIM', l, '1', '0')
redis.pcall('DEL', scratch, h, z, l)
try('publish', PUBLISH, ARGV[1], '')
try('marker (read)', 'HMGET', marker, 'run')
-- Written only when the field can be removed again.
if hdel and try('marker (write)', 'HSET', marker, 'doctor-probe', '1') then
  redis.call('HDEL', marker, 'doctor-probe')
end
return refused
