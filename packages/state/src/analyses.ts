/**
 * After a capture: its `growth` (set by the worker) and its retained-size
 * analysis (asked for through the API, run by the worker as an `analysis`
 * job on a queue of its own). Both are fields of a finished record, written
 * only while the record exists (never recreating one the TTL removed).
 */
import type { Queue } from 'bullmq';
import type { QueueContext } from './context.ts';
import { withRedisDeadline } from './connection.ts';
import { LazyProducer } from './producer.ts';
import { getCapture } from './records.ts';
import { LuaScript, replyStrings } from './script.ts';
import { ANALYSIS_JOB, ANALYSIS_QUEUE, type AnalysisJob, type AnalysisState, type Growth } from './analysis-schema.ts';
import type { CaptureRecord } from './schemas.ts';

/** A queued or running analysis older than this is taken for abandoned: a new request queues another. */
const STALE_AFTER_MS = 60 * 60_000;

/**
 * Set one field of an existing record.
 * KEYS: 1 record. ARGV: 1 field, 2 JSON value, 3 now ISO. Reply: {'ok'} | {'missing'}.
 */
const SET_FIELD_SCRIPT = new LuaScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2], 'updatedAt', ARGV[3])
return {'ok'}
`);

/**
 * Ask for an analysis: only of a succeeded capture with an artifact, and not
 * while one is queued or running (the caller joins that one), unless that one
 * was asked for before ARGV[3]: its worker died twice (BullMQ gave the job up)
 * and nothing will ever finish it.
 * KEYS: 1 record. ARGV: 1 the queued state JSON, 2 now ISO, 3 stale-before ISO.
 * Reply: {'queued'} | {'pending'} | {'missing'} | {'unavailable', status}.
 */
const REQUEST_SCRIPT = new LuaScript(`
local cur = redis.call('HMGET', KEYS[1], 'status', 'artifact', 'analysis')
if not cur[1] then return {'missing'} end
if cur[1] ~= 'succeeded' or not cur[2] or cur[2] == '' then return {'unavailable', cur[1]} end
if cur[3] and cur[3] ~= '' then
  local state = cjson.decode(cur[3])
  -- ISO 8601 UTC timestamps of one format compare as strings.
  if (state.status == 'queued' or state.status == 'running') and state.requestedAt > ARGV[3] then return {'pending'} end
end
redis.call('HSET', KEYS[1], 'analysis', ARGV[1], 'updatedAt', ARGV[2])
return {'queued'}
`);

/**
 * - `queued`: a new analysis job was added;
 * - `pending`: one was already queued or running (the record says which);
 * - `not_found`: no such capture;
 * - `unavailable`: the capture has no artifact to analyse (not succeeded, or expired).
 */
export type AnalysisRequestOutcome = 'queued' | 'pending' | 'not_found' | 'unavailable';

/** Growth and analysis state of finished captures, and the producer of `analysis` jobs. */
export class CaptureAnalyses {
  readonly #ctx: QueueContext;
  readonly #producer: LazyProducer<AnalysisJob>;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
    this.#producer = new LazyProducer(ctx, ANALYSIS_QUEUE);
  }

  /** The BullMQ producer of `analysis` jobs (created on first use; the worker consumes ANALYSIS_QUEUE). */
  get bull(): Queue<AnalysisJob, void, string> {
    return this.#producer.bull;
  }

  /** Record `growth` on a finished capture; false when the record is gone. */
  setGrowth(id: string, growth: Growth): Promise<boolean> {
    return this.#setField(id, 'growth', growth);
  }

  /** Link a snapshot to the continuous profile stored beside it; false when the record is gone. */
  setProfileCapture(id: string, profileCaptureId: string): Promise<boolean> {
    return this.#setField(id, 'profileCaptureId', profileCaptureId);
  }

  /** Record the analysis state (the worker: running, succeeded, failed); false when the record is gone. */
  setState(id: string, state: AnalysisState): Promise<boolean> {
    return this.#setField(id, 'analysis', state);
  }

  /** Ask for the retained-size analysis of capture `id` on behalf of `who`. */
  async request(id: string, who: string): Promise<{ outcome: AnalysisRequestOutcome; record: CaptureRecord | null }> {
    const { redis, keys, settings } = this.#ctx;
    const now = new Date();
    const state: AnalysisState = { status: 'queued', requestedBy: who, requestedAt: now.toISOString() };
    const [word] = replyStrings(
      await withRedisDeadline(
        REQUEST_SCRIPT.run(redis, [keys.record(id)], [JSON.stringify(state), now.toISOString(), new Date(now.getTime() - STALE_AFTER_MS).toISOString()]),
        settings.redisTimeoutMs,
        'request analysis',
      ),
    );
    const outcome: AnalysisRequestOutcome = word === 'missing' ? 'not_found' : (word as AnalysisRequestOutcome);
    if (outcome === 'queued') {
      // One job per request (a later request after this one finished analyses again).
      try {
        await withRedisDeadline(
          this.bull.add(ANALYSIS_JOB, { captureId: id }, { jobId: `${id}-${now.getTime()}`, removeOnComplete: { age: 24 * 3600, count: 1_000 }, removeOnFail: { age: 7 * 24 * 3600, count: 1_000 } }),
          settings.redisTimeoutMs,
          'enqueue analysis',
        );
      } catch (err) {
        // Not left `queued` with no job behind it: the next request may try again.
        const failed: AnalysisState = { ...state, status: 'failed', finishedAt: new Date().toISOString(), error: { code: 'redis_unavailable', message: 'the analysis job could not be queued' } };
        await this.setState(id, failed).catch(() => undefined);
        throw err;
      }
    }
    return { outcome, record: outcome === 'not_found' ? null : await getCapture(this.#ctx, id) };
  }

  /** Close the producer (if it was opened). */
  async close(): Promise<void> {
    await this.#producer.close();
  }

  async #setField(id: string, field: 'growth' | 'analysis' | 'profileCaptureId', value: unknown): Promise<boolean> {
    const { redis, keys, settings } = this.#ctx;
    const now = new Date().toISOString();
    const [word] = replyStrings(await withRedisDeadline(SET_FIELD_SCRIPT.run(redis, [keys.record(id)], [field, JSON.stringify(value), now]), settings.redisTimeoutMs, `set ${field}`));
    return word === 'ok';
  }
}
