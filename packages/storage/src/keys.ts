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
