-- lost: KEYS = hash, fence; ARGV = contender, token, reason, by, CMD's
-- exit code ('' none), held_ms, holder (backend/holder.hpp). The owner of
-- the lease `token` lost it and has stopped its CMD: a "lost" entry in the
-- mutex's history (common.lua: history), and a loss counted when nothing
-- has counted that lease yet (common.lua: count; backend.hpp:
-- record_lost): the hash still shows it as ours, valid or run out (its
-- token is noted there, so that its expiry, written by the next
-- acquisition, or a forced release does not count it again), or there is
-- no trace of it: the fence, which every new lease sets and nothing
-- deletes, is below its token (the server lost it; a missing hash alone is
-- a lease released). Writes nothing else: no lease field changes, none is
-- made or ended.
local now = clock()
local me, token = ARGV[1], tonumber(ARGV[2])
local l = read_lease(KEYS[1], KEYS[2])
local mutex = marker_of(KEYS[1]) or KEYS[1] -- a slot's counts and history are its mutex's
local ours = l.owner == me and l.token == token
if ours then redis.call('HSET', KEYS[1], 'lost_token', int(token)) end
if ours or fence_value(KEYS[2]) < token then count(mutex, 'losses') end
history(mutex, {e = 'lost', at = int(now), o = me, h = ARGV[7] or '', t = int(token),
                hd = ARGV[6], x = ARGV[5], r = ARGV[3], b = ARGV[4]})
return reply(now, false, l)
