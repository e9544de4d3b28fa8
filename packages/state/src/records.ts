/** Reading capture records: one by id, or a filtered page with a cursor. */
import type { QueueContext } from './context.ts';
import { withRedisDeadline } from './connection.ts';
import { QueueError } from './errors.ts';
import { decodeRecord } from './record-codec.ts';
import { CAPTURE_STATUSES, type CaptureOptions, type CaptureRecord, type CaptureStatus, type Trigger } from './schemas.ts';

/** The record of capture `id`, or null. */
export async function getCapture(ctx: QueueContext, id: string): Promise<CaptureRecord | null> {
  const hash = await withRedisDeadline(ctx.redis.hgetall(ctx.keys.record(id)), ctx.settings.redisTimeoutMs, 'getCapture');
  return decodeRecord(hash);
}

/** Filters of listCaptures; all optional, combined with AND. Newest first. */
export interface ListCapturesFilter {
  targetId?: string | undefined;
  status?: CaptureStatus | undefined;
  triggerKind?: Trigger['kind'] | undefined;
  /** What the capture takes: a heap snapshot or an allocation sampling profile (`options.kind`). */
  kind?: CaptureOptions['kind'] | undefined;
  /** createdAt >= from */
  from?: Date | undefined;
  /** createdAt < to */
  to?: Date | undefined;
  /** Page size, 1..100 (default 20). */
  limit?: number | undefined;
  /** `nextCursor` of the previous page. */
  cursor?: string | undefined;
}

/** One page; `nextCursor` is null on the last page. */
export interface CapturePage {
  items: CaptureRecord[];
  nextCursor: string | null;
}

interface Cursor {
  s: number;
  i: string;
}

const BATCH = 100;
/** Entries examined per call before returning a short page with a cursor (bounds the work of a sparse filter). */
const MAX_SCAN = 2_000;

function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url');
}

function decodeCursor(text: string): Cursor {
  try {
    const c: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (typeof c === 'object' && c !== null && 's' in c && 'i' in c && Number.isSafeInteger(c.s) && typeof c.i === 'string') {
      return { s: c.s as number, i: c.i };
    }
  } catch {
    // fall through to the typed error
  }
  throw new QueueError('invalid_cursor', 'cursor is not one this server returned', { cursor: text.slice(0, 100) });
}

/**
 * List records newest first. Reads the most selective index (target, status,
 * trigger kind, else all) by score = createdAt ms and filters the rest in memory.
 */
export async function listCaptures(ctx: QueueContext, filter: ListCapturesFilter = {}): Promise<CapturePage> {
  const limit = filter.limit ?? 20;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new QueueError('invalid_input', 'limit must be an integer 1..100', { limit });
  if (filter.status !== undefined && !CAPTURE_STATUSES.includes(filter.status)) throw new QueueError('invalid_input', 'unknown status', { status: filter.status });
  const cursor = filter.cursor === undefined ? undefined : decodeCursor(filter.cursor);
  const { keys } = ctx;
  const index =
    filter.targetId !== undefined
      ? keys.indexTarget(filter.targetId)
      : filter.status !== undefined
        ? keys.indexStatus(filter.status)
        : filter.triggerKind !== undefined
          ? keys.indexTrigger(filter.triggerKind)
          : keys.indexAll();
  const toMs = filter.to?.getTime();
  const max = cursor !== undefined ? String(cursor.s) : toMs !== undefined ? `(${toMs}` : '+inf';
  const min = filter.from !== undefined ? String(filter.from.getTime()) : '-inf';
  const items: CaptureRecord[] = [];
  let scanned = 0;
  for (let offset = 0; ; offset += BATCH) {
    const flat = await withRedisDeadline(
      ctx.redis.zrange(index, max, min, 'BYSCORE', 'REV', 'LIMIT', offset, BATCH, 'WITHSCORES'),
      ctx.settings.redisTimeoutMs,
      'listCaptures',
    );
    const entries: Cursor[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) entries.push({ i: flat[i]!, s: Number(flat[i + 1]) });
    // Same score: REV order is descending id, so ids >= the cursor's were on earlier pages.
    const fresh = entries.filter((e) => cursor === undefined || e.s < cursor.s || e.i < cursor.i);
    const pipeline = ctx.redis.pipeline();
    for (const e of fresh) pipeline.hgetall(keys.record(e.i));
    const hashes = fresh.length === 0 ? [] : ((await withRedisDeadline(pipeline.exec(), ctx.settings.redisTimeoutMs, 'listCaptures')) ?? []);
    for (const [k, e] of fresh.entries()) {
      scanned++;
      const [err, hash] = hashes[k] ?? [null, {}];
      if (err) throw err;
      const record = decodeRecord(hash as Record<string, string>);
      if (record !== null && matches(record, filter)) items.push(record);
      if (items.length === limit) return { items, nextCursor: encodeCursor(e) };
      if (scanned >= MAX_SCAN) return { items, nextCursor: encodeCursor(e) };
    }
    if (entries.length < BATCH) return { items, nextCursor: null };
  }
}

function matches(r: CaptureRecord, f: ListCapturesFilter): boolean {
  return (
    (f.targetId === undefined || r.targetId === f.targetId) &&
    (f.status === undefined || r.status === f.status) &&
    (f.triggerKind === undefined || r.trigger.kind === f.triggerKind) &&
    (f.kind === undefined || r.options.kind === f.kind)
  );
}

/** Records read per round trip by {@link previousSummary}: the one sought is almost always the first or second. */
const SUMMARY_PAGE = 8;

/**
 * The newest succeeded capture of `targetId` created before `beforeMs`, other than `excludeId`, whose artifact
 * has a summary (its id and summary key), among the target's newest `lookBack` succeeded records: what
 * `listCaptures({ targetId, status: 'succeeded', limit: lookBack, to })` then a search of its items finds, but
 * reading three fields of a few records instead of decoding up to a hundred whole ones (a scheduled capture asks
 * this each time, for its growth).
 */
export async function previousSummary(ctx: QueueContext, targetId: string, beforeMs: number, excludeId: string, lookBack: number): Promise<{ id: string; summaryKey: string } | null> {
  const { keys } = ctx;
  let succeeded = 0;
  let scanned = 0;
  for (let offset = 0; ; offset += SUMMARY_PAGE) {
    const ids = await withRedisDeadline(ctx.redis.zrange(keys.indexTarget(targetId), `(${beforeMs}`, '-inf', 'BYSCORE', 'REV', 'LIMIT', offset, SUMMARY_PAGE), ctx.settings.redisTimeoutMs, 'previousSummary');
    if (ids.length === 0) return null;
    const pipeline = ctx.redis.pipeline();
    for (const id of ids) pipeline.hmget(keys.record(id), 'id', 'status', 'artifact');
    const replies = (await withRedisDeadline(pipeline.exec(), ctx.settings.redisTimeoutMs, 'previousSummary')) ?? [];
    for (const [err, fields] of replies) {
      if (err) throw err;
      scanned++;
      const [id, status, artifact] = fields as (string | null)[];
      // A record gone since the index was read is skipped, as listCaptures skips it.
      if (id === null || id === undefined || status !== 'succeeded') continue;
      succeeded++;
      const summaryKey = artifact === null || artifact === undefined || artifact === '' ? undefined : (JSON.parse(artifact) as { summaryKey?: unknown }).summaryKey;
      if (id !== excludeId && typeof summaryKey === 'string') return { id, summaryKey };
      if (succeeded >= lookBack || scanned >= MAX_SCAN) return null;
    }
    if (ids.length < SUMMARY_PAGE) return null;
  }
}
