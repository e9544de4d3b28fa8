/**
 * What names one capture's artifacts. Apart from the store contract
 * (types.ts) because the key layout (keys.ts) builds keys from it and the
 * contract names document kinds from the key layout: here, neither imports
 * the other.
 */

/** Identifies one capture's artifacts. */
export interface ArtifactRef {
  captureId: string;
  targetId: string;
  /** When the capture started; decides the yyyy/mm/dd part of the key (UTC). */
  startedAt: Date;
  /** gzip the snapshot (default true). */
  gzip: boolean;
  /** What the artifact is: a heap snapshot (default) or a sampling profile (`<captureId>.heapprofile[.gz]`). */
  kind?: ArtifactKind;
}

/** The kinds of artifact a capture stores; absent in older records and manifests means `snapshot`. */
export type ArtifactKind = 'snapshot' | 'sampling-profile';
