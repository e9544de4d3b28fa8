/**
 * Types shared by files that import each other's code the other way round
 * (capture.ts runs the pipe transport, which writes the snapshot with these
 * flags): here, neither needs to import the other for them.
 */

/** Snapshot flags, passed only where the target's V8 knows them. */
export interface SnapshotFlags {
  exposeInternals?: boolean;
  captureNumericValue?: boolean;
  treatGlobalObjectsAsRoots?: boolean;
}
