/**
 * The Lua scripts that make capture state changes atomic. Redis runs a script
 * without interleaving other commands, so "look for a capture to join, else
 * create one" cannot race: 50 concurrent requests for one target create one.
 */
import { LuaScript } from './script.ts';

/** Shared Lua: status names in CAPTURE_STATUSES order, matching the status index KEYS. */
const STATUS_HELPERS = `
local STATUSES = {'queued', 'running', 'succeeded', 'failed', 'cancelled', 'expired'}
local function statusIndex(st, first)
  for i, s in ipairs(STATUSES) do if s == st then return KEYS[first + i - 1] end end
  return nil
end
local function isTerminal(st) return st == 'succeeded' or st == 'failed' or st == 'cancelled' or st == 'expired' end
-- The finished-metrics hash follows the status indexes (which start at KEYS[3]).
local METRICS_KEY = KEYS[3 + #STATUSES]
`;

/**
 * Join, replay or create a capture.
 * KEYS: 1 idempotency key, 2 active set of the target, 3 new record, 4 index all,
 *       5 index target, 6 index status queued, 7 index trigger kind, 8 index of the schedule,
 *       9.. the records of the active set's members as the caller read them, newest first
 *       (a script declares every key it touches; Redis Cluster routes and checks by them).
 * ARGV: 1 use idempotency (0|1), 2 request fingerprint, 3 idempotency TTL ms, 4 force (0|1),
 *       5 new id, 6 createdAt ms, 7 record key prefix, 8 now (ISO),
 *       9 add to the schedule index (0|1: only captures a schedule created, never ones it joined),
 *       10 the join kind (snapshot|snapshot+redact|sampling): only a capture of the same kind is joined,
 *       11.. record fields (with `kind`; a record without it is a snapshot).
 * Reply: {'created'|'replayed'|'reused', id} | {'joined', id, ...HGETALL of the joined record}
 *        | {'stale'} when the active set is no longer what the caller read (it reads again and retries).
 */
export const REQUEST_SCRIPT = new LuaScript(`
local useIdem = ARGV[1] == '1'
if useIdem then
  local v = redis.call('GET', KEYS[1])
  if v then
    local sep = string.find(v, '|', 1, true)
    local id = string.sub(v, 1, sep - 1)
    if string.sub(v, sep + 1) ~= ARGV[2] then return {'reused', id} end
    return {'replayed', id}
  end
end
if ARGV[4] ~= '1' then
  -- Newest first: a queued capture is the likeliest not to have started yet.
  local ids = redis.call('ZREVRANGE', KEYS[2], 0, -1)
  if #ids ~= #KEYS - 8 then return {'stale'} end
  for i, id in ipairs(ids) do
    local rk = KEYS[8 + i]
    if rk ~= ARGV[7] .. id then return {'stale'} end
    local st = redis.call('HGET', rk, 'status')
    local kind = redis.call('HGET', rk, 'kind') or 'snapshot'
    if (st == 'queued' or st == 'running') and kind == ARGV[10] then
      redis.call('HINCRBY', rk, 'coalesced', 1)
      redis.call('HSET', rk, 'updatedAt', ARGV[8])
      if useIdem then redis.call('SET', KEYS[1], id .. '|' .. ARGV[2], 'PX', ARGV[3]) end
      return {'joined', id, unpack(redis.call('HGETALL', rk))}
    end
    -- Finished (or expired) without leaving the set: drop the stale member.
    if st ~= 'queued' and st ~= 'running' then redis.call('ZREM', KEYS[2], id) end
  end
end
local fields = {}
for i = 11, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[3], unpack(fields))
local score, id = ARGV[6], ARGV[5]
redis.call('ZADD', KEYS[4], score, id)
redis.call('ZADD', KEYS[5], score, id)
redis.call('ZADD', KEYS[6], score, id)
redis.call('ZADD', KEYS[7], score, id)
redis.call('ZADD', KEYS[2], score, id)
if ARGV[9] == '1' then redis.call('ZADD', KEYS[8], score, id) end
if useIdem then redis.call('SET', KEYS[1], id .. '|' .. ARGV[2], 'PX', ARGV[3]) end
return {'created', id}
`);

/**
 * Move a record between statuses. A terminal status is never overwritten, and
 * a worker's update carries its attempt number so a worker that lost the job
 * (stalled, then picked up elsewhere) cannot write over the new attempt.
 * A move to a terminal status also adds the finished-capture counters, in the
 * same script: they count every finish exactly once.
 * KEYS: 1 record, 2 active set of the target, 3..8 status indexes, 9 finished-metrics hash.
 * ARGV: 1 to status, 2 allowed from (comma list), 3 expected attempts ('' = any),
 *       4 now ISO, 5 done channel, 6 increment attempts (0|1),
 *       7 N metric increments, 8..7+2N field/integer increment pairs (applied only on a terminal move),
 *       8+2N.. fields to set.
 * Reply: {'ok', status, attempts} | {'missing'} | {'terminal'|'conflict'|'stale', status, attempts}.
 */
export const TRANSITION_SCRIPT = new LuaScript(`${STATUS_HELPERS}
local cur = redis.call('HMGET', KEYS[1], 'status', 'attempts', 'createdAtMs', 'id')
local st, attempts = cur[1], cur[2]
if not st then return {'missing'} end
if isTerminal(st) then return {'terminal', st, attempts} end
if ARGV[3] ~= '' and attempts ~= ARGV[3] then return {'stale', st, attempts} end
if not string.find(',' .. ARGV[2] .. ',', ',' .. st .. ',', 1, true) then return {'conflict', st, attempts} end
local to = ARGV[1]
if ARGV[6] == '1' then attempts = tostring(redis.call('HINCRBY', KEYS[1], 'attempts', 1)) end
local nmetrics = tonumber(ARGV[7])
local first = 8 + 2 * nmetrics
local fields = {'status', to, 'updatedAt', ARGV[4]}
for i = first, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
if to ~= st then
  redis.call('ZREM', statusIndex(st, 3), cur[4])
  redis.call('ZADD', statusIndex(to, 3), cur[3], cur[4])
end
if isTerminal(to) then
  redis.call('ZREM', KEYS[2], cur[4])
  for i = 8, first - 1, 2 do redis.call('HINCRBY', METRICS_KEY, ARGV[i], ARGV[i + 1]) end
  redis.call('PUBLISH', ARGV[5], cur[4] .. ' ' .. to)
end
return {'ok', to, attempts}
`);

/**
 * Begin a worker's attempt in one round trip: read the record, find the target
 * in the registry, take the target's lock, move the record to running (one
 * more attempt) and read the target's last measured snapshot cost. Each step
 * answers before the next changes anything: a missing record, a finished one,
 * a target no longer registered or a lock held elsewhere change nothing.
 * KEYS: 1 record, 2 active set of the target, 3..8 status indexes, 9 finished-metrics hash (unused: the
 *       status helpers' layout), 10 target registry hash, 11 the target's lock, 12 its headroom hash.
 * ARGV: 1 target id, 2 lock token, 3 lease ms, 4 now ISO, 5.. fields to set on start.
 * Reply: {'missing'} | {'terminal', status} | {'no_target', status} | {'busy', status}
 *        | {'started', attempts, registry entry JSON, N, ...N headroom field/value strings, ...HGETALL of the record before the start}.
 */
export const BEGIN_SCRIPT = new LuaScript(`${STATUS_HELPERS}
local cur = redis.call('HMGET', KEYS[1], 'status', 'createdAtMs', 'id')
local st = cur[1]
if not st then return {'missing'} end
if isTerminal(st) then return {'terminal', st} end
local entry = redis.call('HGET', KEYS[10], ARGV[1])
if not entry then return {'no_target', st} end
if not redis.call('SET', KEYS[11], ARGV[2], 'PX', ARGV[3], 'NX') then return {'busy', st} end
local before = redis.call('HGETALL', KEYS[1])
local attempts = tostring(redis.call('HINCRBY', KEYS[1], 'attempts', 1))
local fields = {'status', 'running', 'updatedAt', ARGV[4]}
for i = 5, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
if st ~= 'running' then
  redis.call('ZREM', statusIndex(st, 3), cur[3])
  redis.call('ZADD', statusIndex('running', 3), cur[2], cur[3])
end
local headroom = redis.call('HGETALL', KEYS[12])
local out = {'started', attempts, entry, tostring(#headroom)}
for _, v in ipairs(headroom) do out[#out + 1] = v end
for _, v in ipairs(before) do out[#out + 1] = v end
return out
`);

/**
 * Cancel: a queued capture becomes cancelled here; a running one is flagged and
 * its worker told over pub/sub (the flag also reaches a worker that missed the message).
 * KEYS: 1 record, 2 active set, 3..8 status indexes, 9 finished-metrics hash.
 * ARGV: 1 now ISO, 2 done channel, 3 cancel channel, 4 error JSON for the record,
 *       5 the finished-metrics field a cancelled queued capture increments.
 * Reply: {'cancelled'|'cancelling'|'finished', status} | {'missing'}.
 */
export const CANCEL_SCRIPT = new LuaScript(`${STATUS_HELPERS}
local cur = redis.call('HMGET', KEYS[1], 'status', 'createdAtMs', 'id')
local st = cur[1]
if not st then return {'missing'} end
if isTerminal(st) then return {'finished', st} end
if st == 'running' then
  redis.call('HSET', KEYS[1], 'cancelRequested', '1', 'updatedAt', ARGV[1])
  redis.call('PUBLISH', ARGV[3], cur[3])
  return {'cancelling', st}
end
redis.call('HSET', KEYS[1], 'status', 'cancelled', 'updatedAt', ARGV[1], 'finishedAt', ARGV[1], 'error', ARGV[4])
redis.call('ZREM', statusIndex(st, 3), cur[3])
redis.call('ZADD', statusIndex('cancelled', 3), cur[2], cur[3])
redis.call('ZREM', KEYS[2], cur[3])
redis.call('HINCRBY', METRICS_KEY, ARGV[5], 1)
redis.call('PUBLISH', ARGV[2], cur[3] .. ' cancelled')
return {'cancelled', 'cancelled'}
`);

/**
 * Write a record again after Redis lost its data (queue redis-epoch.ts): the
 * whole hash with its indexes (so GET, lists and retention find it), unless a
 * record is there. A record that only this same path wrote for a capture lost
 * while queued (`lostWithRedis`) gives way: the worker that still ran the
 * capture knows better how it ended.
 * KEYS: 1 record, 2 index all, 3 index target, 4 index of its status, 5 index trigger kind,
 *       6 index of the schedule (or the trigger kind's again), 7 active set of the target,
 *       8 index of status failed (where a `lostWithRedis` record is).
 * ARGV: 1 id, 2 createdAt ms, 3 add to the schedule index (0|1), 4 keep it active (0|1: queued or running),
 *       5.. record fields.
 * Reply: {'restored'} | {'exists', status}.
 */
export const RESTORE_SCRIPT = new LuaScript(`
local cur = redis.call('HMGET', KEYS[1], 'status', 'lostWithRedis')
if cur[1] and cur[2] ~= '1' then return {'exists', cur[1]} end
if cur[1] then
  redis.call('ZREM', KEYS[8], ARGV[1])
  redis.call('DEL', KEYS[1])
end
local fields = {}
for i = 5, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
for i = 2, 5 do redis.call('ZADD', KEYS[i], ARGV[2], ARGV[1]) end
if ARGV[3] == '1' then redis.call('ZADD', KEYS[6], ARGV[2], ARGV[1]) end
if ARGV[4] == '1' then redis.call('ZADD', KEYS[7], ARGV[2], ARGV[1]) else redis.call('ZREM', KEYS[7], ARGV[1]) end
return {'restored'}
`);
