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

/**
 * Rewrites the snapshot bytes before anything of heapcap's holds them (the
 * spill buffer, its file, the consumer): redaction (`SnapshotRedactor` in
 * @heapcap/analysis, or `RedactorThread` in @heapcap/pipeline, which runs it
 * on a thread of its own and emits later, in order).
 */
export interface SnapshotTransform {
  /** Just before the snapshot is asked for (e.g. to start a thread while the target generates it). */
  open?(): void;
  /**
   * One chunk in (the caller may reuse it once this returns); the bytes to keep
   * go to `emit`, during this call or later (in order, until `end` settles),
   * whose buffer may be reused once it returns. Throws on bytes it cannot
   * rewrite (or on an earlier chunk's failure, when it emits later).
   */
  write(chunk: Buffer, emit: (bytes: Buffer) => void): void;
  /** After the last chunk, once every byte was emitted; throws (or rejects) when the snapshot ended where the transform cannot have finished. */
  end(): unknown;
  /** Frees what the transform holds (its thread) when the snapshot stops early; called in any case, after `end` or instead of it. */
  close?(): void;
}
