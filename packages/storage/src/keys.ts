/**
 * Artifact key layout: `<prefix>/<targetId>/<yyyy>/<mm>/<dd>/<captureId>.<suffix>`.
 * Known only to this package: stores return keys, callers hand them back.
 */
import { CaptureError } from '@heapcap/errors';
import type { ArtifactRef } from './artifact-ref.ts';

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

/** Key of the artifact object: `.heapsnapshot`, or `.heapprofile` (the extension DevTools' Memory tab loads) for a sampling profile. */
export function snapshotKey(ref: ArtifactRef, prefix = ''): string {
  const extension = ref.kind === 'sampling-profile' ? 'heapprofile' : 'heapsnapshot';
  return `${artifactDir(ref, prefix)}/${ref.captureId}.${extension}${ref.gzip ? '.gz' : ''}`;
}

/** How a manifest's key ends. */
export const MANIFEST_SUFFIX = '.manifest.json';

/** Key of the manifest written beside the snapshot. */
export function manifestKey(ref: ArtifactRef, prefix = ''): string {
  return `${artifactDir(ref, prefix)}/${ref.captureId}${MANIFEST_SUFFIX}`;
}

/**
 * Derived JSON documents a capture may own beside its snapshot: the summary
 * (written while the capture streams) and the retained-size analysis (a job);
 * and a leak hunt's report, filed like a capture's objects under the hunt's id.
 */
export const DOCUMENT_KINDS = ['summary', 'analysis', 'leak-hunt'] as const;
export type DocumentKind = (typeof DOCUMENT_KINDS)[number];

/** Key of a derived document: `<dir>/<captureId>.<kind>.json`. */
export function documentKey(loc: CaptureLocation, kind: DocumentKind): string {
  return `${loc.dir}/${loc.captureId}.${kind}.json`;
}

/** Content type of the snapshot object. */
export const SNAPSHOT_CONTENT_TYPE = 'application/json';

/** Names of every object one capture may own, in deletion order (manifest first: its presence means "complete"). */
const CAPTURE_OBJECTS = ['.manifest.json', '.summary.json', '.analysis.json', '.leak-hunt.json', '.heapsnapshot.gz', '.heapsnapshot', '.heapprofile.gz', '.heapprofile'] as const;

/** Where one capture's objects live: its directory and capture id. */
export interface CaptureLocation {
  dir: string;
  captureId: string;
}

/** The location of `ref`'s objects. */
export function locationOfRef(ref: Pick<ArtifactRef, 'targetId' | 'startedAt' | 'captureId'>): CaptureLocation {
  return { dir: artifactDir(ref), captureId: ref.captureId };
}

/** The location of the capture that owns `key` (any of its objects' keys). */
export function locationOfKey(key: string): CaptureLocation {
  const slash = key.lastIndexOf('/');
  const name = key.slice(slash + 1);
  const suffix = CAPTURE_OBJECTS.find((s) => name.endsWith(s));
  if (slash <= 0 || suffix === undefined || name.length === suffix.length) {
    throw new CaptureError('invalid_input', `not an artifact key: ${JSON.stringify(key)}`);
  }
  return { dir: key.slice(0, slash), captureId: name.slice(0, -suffix.length) };
}

/**
 * The key or location of another object of the same capture: `'manifest'` or a
 * derived document, beside `keyOrLocation` (any of the capture's keys, or a
 * location a store returned: a path or an `s3://` URL ends with the key).
 * For callers that hold only one object's place, e.g. a `--json` manifest.
 */
export function siblingOf(keyOrLocation: string, object: 'manifest' | DocumentKind): string {
  const loc = locationOfKey(keyOrLocation);
  return object === 'manifest' ? `${loc.dir}/${loc.captureId}.manifest.json` : documentKey(loc, object);
}

/** Keys (relative to the store root) of every object a capture may own. */
export function captureObjectKeys(loc: CaptureLocation): string[] {
  return CAPTURE_OBJECTS.map((suffix) => `${loc.dir}/${loc.captureId}${suffix}`);
}

/**
 * The file name a download is saved under (the API's Content-Disposition and
 * `heapcap captures download`): `<target>-<UTC time>-<captureId>.heapsnapshot[.gz]`,
 * `.heapprofile` for a sampling profile. The time (`20261126T223302Z`) sorts
 * and is a valid file name on every system.
 */
export function downloadFileName(c: { id: string; targetId: string; createdAt: string; kind?: 'snapshot' | 'sampling-profile' | undefined }, gzip: boolean): string {
  const time = c.createdAt.replace(/\.\d+Z$/, 'Z').replace(/[-:]/g, '');
  const extension = c.kind === 'sampling-profile' ? 'heapprofile' : 'heapsnapshot';
  return `${c.targetId}-${time}-${c.id}.${extension}${gzip ? '.gz' : ''}`;
}
