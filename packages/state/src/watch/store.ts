/**
 * Watch rules in Redis: the definitions (one hash, id → JSON), each rule's
 * state per target (a hash per rule), the samples of each watched target (a
 * capped stream), the sampler leases (one watcher samples a target, however
 * many processes run) and the firing caps (a sorted set of firing times per
 * rule and target: at most maxPerDay in any 24 hours, checked and added in one
 * script, and only by the lease holder).
 */
import type { QueueContext } from '../context.ts';
import { withRedisDeadline } from '../connection.ts';
import { LuaScript } from '../script.ts';
import { ProfileStateSchema, type ProfileState } from './profile-state.ts';
import { downReason, TargetDownSchema, type TargetDown } from './down.ts';
import { FIRING_OUTCOMES, WatchRuleSchema, WatchSampleSchema, WatchTargetStateSchema, type FiringOutcome, type WatchRule, type WatchSample, type WatchTargetState } from './schema.ts';

const DAY_MS = 86_400_000;

const firingField = (outcome: FiringOutcome): string => `watch_firings|${outcome}`;

/**
 * Take or keep the leases of several targets in one round trip.
 * KEYS: lease keys. ARGV: 1 holder, 2 ttl ms. Reply: 1 (ours now) or 0 per key.
 */
const LEASE = new LuaScript(`
local out = {}
for i, key in ipairs(KEYS) do
  local cur = redis.call('GET', key)
  if cur == false then
    redis.call('SET', key, ARGV[1], 'PX', ARGV[2])
    out[i] = 1
  elseif cur == ARGV[1] then
    redis.call('PEXPIRE', key, ARGV[2])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
`);

/** KEYS: lease keys. ARGV: 1 holder. Deletes those it holds. */
const RELEASE = new LuaScript(`
local n = 0
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then redis.call('DEL', key); n = n + 1 end
end
return n
`);

/**
 * KEYS: 1 lease, 2 firing times (sorted set), 3 definitions. ARGV: 1 holder, 2 now ms, 3 max per day, 4 rule id, 5 member.
 * Reply: 'fire' | 'cap' | 'not_holder' | 'gone' (rule deleted).
 */
const TRY_FIRE = new LuaScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 'not_holder' end
if redis.call('HEXISTS', KEYS[3], ARGV[4]) == 0 then return 'gone' end
local now = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - ${DAY_MS})
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return 'cap' end
redis.call('ZADD', KEYS[2], now, ARGV[5])
redis.call('PEXPIRE', KEYS[2], ${DAY_MS + 3_600_000})
return 'fire'
`);

/** KEYS: 1 definitions, 2 states of the rule. ARGV: 1 rule id, 2 target id, 3 state JSON. Only while the rule exists. */
const SET_STATE = new LuaScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return 1
`);

/** A sample as served: its stream id and the sample. */
export interface StoredSample {
  id: string;
  sample: WatchSample;
}

/** Definitions, states, samples, leases and caps of watch rules. */
export class WatchStore {
  readonly #ctx: QueueContext;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  #deadline<T>(p: Promise<T>, what: string): Promise<T> {
    return withRedisDeadline(p, this.#ctx.settings.redisTimeoutMs, what);
  }

  get #keys() {
    return this.#ctx.keys;
  }

  /** One rule, or null. */
  async get(id: string): Promise<WatchRule | null> {
    const v = await this.#deadline(this.#ctx.redis.hget(this.#keys.watchRules(), id), 'watch rule get');
    return v === null ? null : WatchRuleSchema.parse(JSON.parse(v));
  }

  /** Every rule, sorted by id. */
  async list(): Promise<WatchRule[]> {
    const all = await this.#deadline(this.#ctx.redis.hgetall(this.#keys.watchRules()), 'watch rules list');
    return Object.values(all)
      .map((v) => WatchRuleSchema.parse(JSON.parse(v)))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Store a rule (create or replace); `created` is false for a replacement. A replacement keeps the states (the episode goes on). */
  async put(rule: WatchRule): Promise<{ created: boolean }> {
    const parsed = WatchRuleSchema.parse(rule);
    const added = await this.#deadline(this.#ctx.redis.hset(this.#keys.watchRules(), parsed.id, JSON.stringify(parsed)), 'watch rule put');
    return { created: added === 1 };
  }

  /** Delete a rule and its states (its firing caps expire on their own within a day). */
  async remove(id: string): Promise<boolean> {
    const [[, n]] = (await this.#deadline(this.#ctx.redis.multi().hdel(this.#keys.watchRules(), id).del(this.#keys.watchStates(id)).exec(), 'watch rule delete')) as [[unknown, number]];
    return n === 1;
  }

  /** The states of one rule, by target id. */
  async states(ruleId: string): Promise<Map<string, WatchTargetState>> {
    const all = await this.#deadline(this.#ctx.redis.hgetall(this.#keys.watchStates(ruleId)), 'watch states');
    return new Map(Object.entries(all).map(([targetId, v]) => [targetId, WatchTargetStateSchema.parse(JSON.parse(v))]));
  }

  /** The state of one rule for one target, or null. */
  async state(ruleId: string, targetId: string): Promise<WatchTargetState | null> {
    const v = await this.#deadline(this.#ctx.redis.hget(this.#keys.watchStates(ruleId), targetId), 'watch state');
    return v === null ? null : WatchTargetStateSchema.parse(JSON.parse(v));
  }

  /** Save one state (ignored when the rule was deleted meanwhile). */
  async setState(ruleId: string, state: WatchTargetState): Promise<void> {
    await this.#deadline(
      SET_STATE.run(this.#ctx.redis, [this.#keys.watchRules(), this.#keys.watchStates(ruleId)], [ruleId, state.targetId, JSON.stringify(WatchTargetStateSchema.parse(state))]),
      'watch state set',
    );
  }

  /** Drop the states of targets a rule no longer watches. */
  async dropStates(ruleId: string, targetIds: string[]): Promise<void> {
    if (targetIds.length === 0) return;
    await this.#deadline(this.#ctx.redis.hdel(this.#keys.watchStates(ruleId), ...targetIds), 'watch states drop');
  }

  /**
   * Take (or keep) the sampler leases of `targetIds` for `holder` for `ttlMs`;
   * returns the ids it holds now. A holder that stops renewing loses them after `ttlMs`.
   */
  async lease(targetIds: string[], holder: string, ttlMs: number): Promise<Set<string>> {
    if (targetIds.length === 0) return new Set();
    const reply = (await this.#deadline(LEASE.run(this.#ctx.redis, targetIds.map((id) => this.#keys.watchLease(id)), [holder, Math.max(1, Math.round(ttlMs))]), 'watch lease')) as number[];
    return new Set(targetIds.filter((_, i) => reply[i] === 1));
  }

  /** Give up the leases `holder` holds among `targetIds` (on shutdown, or when a target is no longer watched). */
  async release(targetIds: string[], holder: string): Promise<void> {
    if (targetIds.length === 0) return;
    await this.#deadline(RELEASE.run(this.#ctx.redis, targetIds.map((id) => this.#keys.watchLease(id)), [holder]), 'watch lease release');
  }

  /** Who samples `targetId` now, and for how much longer (null: nobody). */
  async leaseOf(targetId: string): Promise<{ holder: string; ttlMs: number } | null> {
    const key = this.#keys.watchLease(targetId);
    const [[, holder], [, ttl]] = (await this.#deadline(this.#ctx.redis.multi().get(key).pttl(key).exec(), 'watch lease get')) as [[unknown, string | null], [unknown, number]];
    return holder === null ? null : { holder, ttlMs: Math.max(0, ttl) };
  }

  /**
   * Count a firing against the rule's cap for the target, atomically, only
   * while `holder` holds the target's lease and the rule exists.
   */
  async tryFire(ruleId: string, targetId: string, holder: string, maxPerDay: number, now: number): Promise<'fire' | 'cap' | 'not_holder' | 'gone'> {
    const reply = await this.#deadline(
      TRY_FIRE.run(this.#ctx.redis, [this.#keys.watchLease(targetId), this.#keys.watchFirings(ruleId, targetId), this.#keys.watchRules()], [holder, now, maxPerDay, ruleId, `${now}-${holder}`]),
      'watch try fire',
    );
    return reply as 'fire' | 'cap' | 'not_holder' | 'gone';
  }

  /**
   * Append a sample to the target's stream, keeping the newest `keep`. A
   * stream no longer written to (the target is not watched any more) expires
   * `retentionMs` (at least an hour) after its last sample.
   */
  async addSample(targetId: string, sample: WatchSample, keep: number, retentionMs: number): Promise<string> {
    const key = this.#keys.watchSamples(targetId);
    const s = WatchSampleSchema.parse(sample);
    const fields = ['t', String(s.t), 'used', String(s.heapUsedBytes), 'total', String(s.heapTotalBytes), 'limit', s.heapLimitBytes === null ? '' : String(s.heapLimitBytes), 'rss', s.rssBytes === null ? '' : String(s.rssBytes)];
    const [[err, id]] = (await this.#deadline(
      this.#ctx.redis
        .multi()
        .xadd(key, 'MAXLEN', '=', String(keep), '*', ...fields)
        .pexpire(key, Math.max(3_600_000, Math.round(retentionMs)))
        // The target answers: it is no longer down (in the same round trip).
        .del(this.#keys.watchDown(targetId))
        .exec(),
      'watch sample add',
    )) as [[Error | null, string]];
    if (err !== null) throw err;
    return id;
  }

  /** Samples of `targetId` between two times (ms, inclusive), oldest first, at most `limit`. */
  async samples(targetId: string, sinceMs: number, untilMs: number, limit: number): Promise<StoredSample[]> {
    const entries = await this.#deadline(this.#ctx.redis.xrange(this.#keys.watchSamples(targetId), String(Math.max(0, sinceMs)), String(untilMs), 'COUNT', limit), 'watch samples');
    return entries.map(([id, fields]) => ({ id, sample: decodeSample(fields) }));
  }

  /**
   * The newest `count` samples of each of `targetIds` no older than `sinceMs`,
   * oldest first, in ONE round trip (a pipeline of XREVRANGE): what a page of
   * the console's targets view shows, and what /metrics exports per target.
   * A target without such samples maps to [].
   */
  async newestSamples(targetIds: readonly string[], sinceMs: number, count: number): Promise<Map<string, WatchSample[]>> {
    const out = new Map<string, WatchSample[]>();
    if (targetIds.length === 0) return out;
    const pipe = this.#ctx.redis.pipeline();
    for (const id of targetIds) pipe.xrevrange(this.#keys.watchSamples(id), '+', String(Math.max(0, sinceMs)), 'COUNT', count);
    const replies = (await this.#deadline(pipe.exec(), 'newest watch samples')) ?? [];
    targetIds.forEach((id, i) => {
      const [err, entries] = replies[i] ?? [null, []];
      if (err !== null) throw err;
      out.set(id, (entries as [string, string[]][]).map(([, fields]) => decodeSample(fields)).reverse());
    });
    return out;
  }

  /**
   * When each of `targetIds` was last sampled (its stream's newest sample, ms), by whichever process held it; a
   * target without samples is left out. One round trip for all of them.
   */
  async lastSampleTimes(targetIds: string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    if (targetIds.length === 0) return out;
    const pipeline = this.#ctx.redis.pipeline();
    for (const id of targetIds) pipeline.xrevrange(this.#keys.watchSamples(id), '+', '-', 'COUNT', 1);
    const replies = (await this.#deadline(pipeline.exec(), 'watch last samples')) ?? [];
    replies.forEach(([err, entries], i) => {
      if (err) throw err;
      const newest = (entries as [string, string[]][])[0];
      if (newest !== undefined) out.set(targetIds[i] as string, decodeSample(newest[1]).t);
    });
    return out;
  }

  /**
   * Record a failed sample of `targetId`: its reason, code and message, when it happened, and (kept from the first
   * failure) since when the target is down. The record goes with the target's next sample (addSample), or expires
   * after `retentionMs` (at least an hour) once nobody samples the target.
   */
  async recordDown(targetId: string, code: string, message: string, at: number, retentionMs: number): Promise<void> {
    const key = this.#keys.watchDown(targetId);
    await this.#deadline(
      this.#ctx.redis
        .multi()
        .hsetnx(key, 'since', String(at))
        .hset(key, 'at', String(at), 'reason', downReason(code, message), 'code', code, 'message', message.slice(0, 500))
        .pexpire(key, Math.max(3_600_000, Math.round(retentionMs)))
        .exec(),
      'watch down record',
    );
  }

  /** The targets among `targetIds` whose last sample failed, and why; one round trip. */
  async downs(targetIds: readonly string[]): Promise<Map<string, TargetDown>> {
    const out = new Map<string, TargetDown>();
    if (targetIds.length === 0) return out;
    const pipe = this.#ctx.redis.pipeline();
    for (const id of targetIds) pipe.hgetall(this.#keys.watchDown(id));
    const replies = (await this.#deadline(pipe.exec(), 'watch downs')) ?? [];
    targetIds.forEach((id, i) => {
      const [err, h] = replies[i] ?? [null, {}];
      if (err !== null) throw err;
      const f = h as Record<string, string>;
      if (f.at === undefined) return;
      const parsed = TargetDownSchema.safeParse({ since: Number(f.since ?? f.at), at: Number(f.at), reason: f.reason, code: f.code ?? '', message: f.message ?? '' });
      if (parsed.success) out.set(id, parsed.data);
    });
    return out;
  }

  /** The continuous profile's state of `targetId` (profile-state.ts), or null. */
  async profileState(targetId: string): Promise<ProfileState | null> {
    const v = await this.#deadline(this.#ctx.redis.get(this.#keys.watchProfile(targetId)), 'profile state get');
    return v === null ? null : ProfileStateSchema.parse(JSON.parse(v));
  }

  /** Store it for `ttlMs` (renewed by the holder; it outlives a dead holder long enough for the next to see the gap). */
  async setProfileState(targetId: string, state: ProfileState, ttlMs: number): Promise<void> {
    await this.#deadline(this.#ctx.redis.set(this.#keys.watchProfile(targetId), JSON.stringify(ProfileStateSchema.parse(state)), 'PX', Math.max(1, Math.round(ttlMs))), 'profile state set');
  }

  /** Forget it: the profile was switched off or the target left the registry. */
  async dropProfileState(targetId: string): Promise<void> {
    await this.#deadline(this.#ctx.redis.del(this.#keys.watchProfile(targetId)), 'profile state drop');
  }

  /** Samples stored for `targetId` now. */
  sampleCount(targetId: string): Promise<number> {
    return this.#deadline(this.#ctx.redis.xlen(this.#keys.watchSamples(targetId)), 'watch samples count');
  }

  /** Count a firing outcome (cluster-wide, for /metrics). */
  async countFiring(outcome: FiringOutcome): Promise<void> {
    await this.#deadline(this.#ctx.redis.hincrby(this.#keys.counters(), firingField(outcome), 1), 'watch firing count');
  }

  /** Firings by outcome since Redis was created. */
  async firingCounts(): Promise<Record<FiringOutcome, number>> {
    const values = await this.#deadline(this.#ctx.redis.hmget(this.#keys.counters(), ...FIRING_OUTCOMES.map(firingField)), 'watch firing counters');
    return Object.fromEntries(FIRING_OUTCOMES.map((o, i) => [o, Number(values[i] ?? 0)])) as Record<FiringOutcome, number>;
  }
}

function decodeSample(fields: string[]): WatchSample {
  const m = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) m.set(fields[i]!, fields[i + 1]!);
  const num = (k: string): number => Number(m.get(k) ?? 0);
  const opt = (k: string): number | null => {
    const v = m.get(k);
    return v === undefined || v === '' ? null : Number(v);
  };
  return { t: num('t'), heapUsedBytes: num('used'), heapTotalBytes: num('total'), heapLimitBytes: opt('limit'), rssBytes: opt('rss') };
}
