/**
 * Capture records are Redis hashes: scalar fields stay scalar so scripts can
 * HINCRBY/HSET them atomically; nested fields are JSON strings. An empty string
 * stands for null. Fields outside the schema (`createdAtMs`, `cancelRequested`,
 * `forced`, `expiring`, `placement`, `kind`: the capture kind the request script
 * coalesces by) are bookkeeping and never leave this package.
 */
import { CaptureRecordSchema, type CaptureRecord } from './schemas.ts';

/** Hash fields and values of a new record, flattened for HSET. */
export function encodeRecord(record: CaptureRecord, extra: Record<string, string> = {}): string[] {
  const fields: Record<string, string> = {
    id: record.id,
    targetId: record.targetId,
    labels: JSON.stringify(record.labels),
    trigger: JSON.stringify(record.trigger),
    options: JSON.stringify(record.options),
    status: record.status,
    phase: record.phase ?? '',
    error: record.error === null ? '' : JSON.stringify(record.error),
    timings: record.timings === null ? '' : JSON.stringify(record.timings),
    artifact: record.artifact === null ? '' : JSON.stringify(record.artifact),
    attempts: String(record.attempts),
    pinned: record.pinned === null ? '' : JSON.stringify(record.pinned),
    expired: record.expired === null ? '' : JSON.stringify(record.expired),
    coalesced: String(record.coalesced),
    createdAt: record.createdAt,
    createdAtMs: String(Date.parse(record.createdAt)),
    startedAt: record.startedAt ?? '',
    finishedAt: record.finishedAt ?? '',
    updatedAt: record.updatedAt,
    ...(record.growth === undefined ? {} : { growth: JSON.stringify(record.growth) }),
    ...(record.analysis === undefined ? {} : { analysis: JSON.stringify(record.analysis) }),
    ...(record.profileCaptureId === undefined ? {} : { profileCaptureId: JSON.stringify(record.profileCaptureId) }),
    ...(record.adoptedAt === undefined ? {} : { adoptedAt: record.adoptedAt }),
    ...(record.requeuedAfterDataLoss === true ? { requeuedAfterDataLoss: '1' } : {}),
    ...(record.progress === undefined ? {} : { progress: JSON.stringify(record.progress) }),
    ...(record.failedAttempts === undefined ? {} : { failedAttempts: JSON.stringify(record.failedAttempts) }),
    ...(record.redaction === undefined ? {} : { redaction: JSON.stringify(record.redaction) }),
    ...extra,
  };
  return Object.entries(fields).flat();
}

const json = (v: string | undefined): unknown => (v === undefined || v === '' ? null : JSON.parse(v));
const str = (v: string | undefined): string | null => (v === undefined || v === '' ? null : v);

/** The record stored in `hash` (HGETALL result), or null for a missing key. Throws if the stored record is corrupt. */
export function decodeRecord(hash: Record<string, string>): CaptureRecord | null {
  if (hash['id'] === undefined) return null;
  return CaptureRecordSchema.parse({
    id: hash['id'],
    targetId: hash['targetId'],
    labels: json(hash['labels']) ?? {},
    trigger: json(hash['trigger']),
    options: json(hash['options']),
    status: hash['status'],
    phase: str(hash['phase']),
    error: json(hash['error']),
    timings: json(hash['timings']),
    artifact: json(hash['artifact']),
    attempts: Number(hash['attempts'] ?? 0),
    pinned: json(hash['pinned']),
    expired: json(hash['expired']),
    coalesced: Number(hash['coalesced'] ?? 0),
    ...(hash['worker'] === undefined || hash['worker'] === '' ? {} : { worker: hash['worker'] }),
    createdAt: hash['createdAt'],
    startedAt: str(hash['startedAt']),
    finishedAt: str(hash['finishedAt']),
    updatedAt: hash['updatedAt'],
    // Added later: absent from older records, and then absent here too.
    ...(hash['growth'] === undefined || hash['growth'] === '' ? {} : { growth: json(hash['growth']) }),
    ...(hash['analysis'] === undefined || hash['analysis'] === '' ? {} : { analysis: json(hash['analysis']) }),
    ...(hash['profileCaptureId'] === undefined || hash['profileCaptureId'] === '' ? {} : { profileCaptureId: json(hash['profileCaptureId']) }),
    ...(hash['adoptedAt'] === undefined || hash['adoptedAt'] === '' ? {} : { adoptedAt: hash['adoptedAt'] }),
    ...(hash['requeuedAfterDataLoss'] === '1' ? { requeuedAfterDataLoss: true } : {}),
    ...(hash['progress'] === undefined || hash['progress'] === '' ? {} : { progress: json(hash['progress']) }),
    ...(hash['failedAttempts'] === undefined || hash['failedAttempts'] === '' ? {} : { failedAttempts: json(hash['failedAttempts']) }),
    ...(hash['redaction'] === undefined || hash['redaction'] === '' ? {} : { redaction: json(hash['redaction']) }),
  });
}

/** Flatten a partial update for HSET; null becomes the empty string (stored null). */
export function encodeUpdate(update: Partial<Pick<CaptureRecord, 'phase' | 'error' | 'timings' | 'artifact' | 'startedAt' | 'finishedAt' | 'worker' | 'redaction' | 'failedAttempts'>> & { progress?: CaptureRecord['progress'] | null }): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(update)) {
    if (v === undefined) continue;
    out.push(k, v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v));
  }
  return out;
}
