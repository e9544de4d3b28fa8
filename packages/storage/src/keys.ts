/** Artifact key layout: `<prefix>/<targetId>/<yyyy>/<mm>/<dd>/<captureId>.<suffix>`. */
import type { ArtifactRef } from './types.ts';

/** The directory part of a capture's keys (UTC date of `startedAt`). */
export function artifactDir(ref: Pick<ArtifactRef, 'targetId' | 'startedAt'>, prefix = ''): string {
  const d = ref.startedAt;
  const parts = [
    ref.targetId,
    String(d.getUTCFullYear()),
    String(d.getUTCMonth() + 1).padStart(2, '0'),
    String(d.getUTCDate()).padStart(2, '0'),
  ];
  const p = prefix.replace(/^\/+|\/+$/g, '');
  return p === '' ? parts.join('/') : `${p}/${parts.join('/')}`;
}

/** Key of the snapshot object. */
export function snapshotKey(ref: ArtifactRef, prefix = ''): string {
  return `${artifactDir(ref, prefix)}/${ref.captureId}.heapsnapshot${ref.gzip ? '.gz' : ''}`;
}

/** Key of the manifest written beside the snapshot. */
export function manifestKey(ref: ArtifactRef, prefix = ''): string {
  return `${artifactDir(ref, prefix)}/${ref.captureId}.manifest.json`;
}

/** Content type of the snapshot object. */
export const SNAPSHOT_CONTENT_TYPE = 'application/json';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * A new capture id: a ULID (48-bit millisecond time + 80 random bits, Crockford
 * base32), so ids sort by creation time in listings and object stores.
 */
export function newCaptureId(now: number = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32]! + time;
    t = Math.floor(t / 32);
  }
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let rand = '';
  for (const b of bytes) rand += CROCKFORD[b % 32]!;
  return time + rand;
}

/** Ids and target ids become key segments: keep them to a safe alphabet. */
export const SAFE_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
