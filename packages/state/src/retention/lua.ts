/**
 * The atomic steps of retention and pins. A pin and a deletion must never
 * cross: retention first *claims* a capture (only if it is succeeded, has an
 * artifact and is not pinned), which marks it `expiring` and puts it in the
 * pending set; a pin is refused while it is expiring; the claim is retried
 * until the objects are gone and the record is *expired*.
 */
import { LuaScript } from '../script.ts';

/**
 * Claim a capture for deletion.
 * KEYS: 1 record, 2 pending set. ARGV: 1 now ms, 2 claim JSON ({reason, scheduleId?}), 3 capture id.
 * Reply: {'ok'} | {'missing'} | {'status', status} | {'pinned'} | {'no_artifact'}.
 */
export const CLAIM_SCRIPT = new LuaScript(`
local cur = redis.call('HMGET', KEYS[1], 'status', 'pinned', 'artifact')
if not cur[1] then return {'missing'} end
if cur[1] ~= 'succeeded' then return {'status', cur[1]} end
if cur[2] and cur[2] ~= '' then return {'pinned'} end
if not cur[3] or cur[3] == '' then return {'no_artifact'} end
redis.call('HSET', KEYS[1], 'expiring', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[3])
return {'ok'}
`);

/**
 * After the objects are deleted: succeeded → expired, artifact cleared, the
 * `expired` facts written, out of the pending set.
 * KEYS: 1 record, 2 pending set, 3 index succeeded, 4 index expired.
 * ARGV: 1 capture id, 2 now ISO, 3 expired JSON.
 * Reply: {'ok'} | {'status', status or ''}.
 */
export const EXPIRE_SCRIPT = new LuaScript(`
local cur = redis.call('HMGET', KEYS[1], 'status', 'createdAtMs')
redis.call('ZREM', KEYS[2], ARGV[1])
if cur[1] ~= 'succeeded' then return {'status', cur[1] or ''} end
redis.call('HSET', KEYS[1], 'status', 'expired', 'artifact', '', 'expired', ARGV[3], 'updatedAt', ARGV[2])
redis.call('HDEL', KEYS[1], 'expiring')
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZADD', KEYS[4], cur[2], ARGV[1])
return {'ok'}
`);

/**
 * Delete a record past its TTL, with its index entries, if it still has no
 * artifact, is finished and unpinned, and was last updated before the cutoff.
 * KEYS: 1 record, 2 index all, 3 index target, 4 index trigger kind, 5 index schedule (or a stand-in),
 *       6 active set of the target, 7.. every status index.
 * ARGV: 1 capture id, 2 cutoff ISO.
 * Reply: {'deleted'} | {'kept'}.
 */
export const DELETE_RECORD_SCRIPT = new LuaScript(`
local cur = redis.call('HMGET', KEYS[1], 'status', 'artifact', 'pinned', 'updatedAt', 'expiring')
local st = cur[1]
local finished = st == 'succeeded' or st == 'failed' or st == 'cancelled' or st == 'expired'
if st and (not finished or (cur[2] and cur[2] ~= '') or (cur[3] and cur[3] ~= '') or (cur[5] and cur[5] ~= '') or (cur[4] or '') > ARGV[2]) then
  return {'kept'}
end
redis.call('DEL', KEYS[1])
for i = 2, #KEYS do redis.call('ZREM', KEYS[i], ARGV[1]) end
return {'deleted'}
`);

/**
 * Pin (ARGV[3] = '1') or unpin a capture.
 * KEYS: 1 record. ARGV: 1 pinned JSON (ignored when unpinning), 2 now ISO, 3 pin (1|0).
 * Reply: {'ok'} | {'missing'} | {'expired'} | {'expiring'}.
 */
export const PIN_SCRIPT = new LuaScript(`
local cur = redis.call('HMGET', KEYS[1], 'status', 'expiring')
if not cur[1] then return {'missing'} end
if ARGV[3] == '1' then
  if cur[1] == 'expired' then return {'expired'} end
  if cur[2] and cur[2] ~= '' then return {'expiring'} end
  redis.call('HSET', KEYS[1], 'pinned', ARGV[1], 'updatedAt', ARGV[2])
else
  redis.call('HSET', KEYS[1], 'pinned', '', 'updatedAt', ARGV[2])
end
return {'ok'}
`);
