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
 * @heapcap/analysis). Synchronous, on the thread that receives the chunks.
 */
export interface SnapshotTransform {
  /** One chunk in; the bytes to keep go to `emit`, whose buffer may be reused once it returns. Throws on bytes it cannot rewrite. */
  write(chunk: Buffer, emit: (bytes: Buffer) => void): void;
  /** After the last chunk; throws when the snapshot ended where the transform cannot have finished. */
  end(): unknown;
}
