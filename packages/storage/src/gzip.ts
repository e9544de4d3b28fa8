/** The gzip stage every sink puts between the digest and the store. */
import { createGzip, type Gzip } from 'node:zlib';

/**
 * Level 4, chosen by measurement (bench/gzip-level.ts, Node 20.20 / zlib 1.3.1,
 * this 2-core VM, a 221 MB snapshot of a 125 MB heap written by
 * v8.writeHeapSnapshot, fed in 100 KiB chunks like CDP; median of 3):
 *
 * | level | gzip MB/s | digest+gzip+file MB/s | MB per CPU-s | size vs 6 |
 * |------:|----------:|----------------------:|-------------:|----------:|
 * |     1 |   178-274 |               159-219 |      168-200 |     1.28x |
 * |     3 |   152-186 |               137-159 |      136-142 |     1.22x |
 * |     4 |   167-171 |               129-137 |      132-142 |     1.15x |
 * |     5 |   100-114 |                83-100 |       96-107 |     1.02x |
 * |     6 |     69-72 |                 57-65 |        63-67 |     1.00x |
 *
 * (ratio at level 6: 8.3x; MB/s measured at load average 3-4 from other work,
 * CPU-s at 12-14.) The target serializes at ~75 MB/s, so the sink needs
 * >= ~100 MB/s with margin: level 4 costs the same CPU as level 3 and stores
 * 6% less; level 5 has no margin (~75% of a core at 75 MB/s). When the
 * host was saturated (load 8-14 on 2 cores) level 4's sink path fell to
 * 44-96 MB/s wall-clock; the engine's spill buffer absorbs that (the socket
 * never stalls), it only lengthens the upload tail.
 * memLevel 9 + chunkSize 64 KiB: MB per CPU-s -3%..+11% vs the defaults across
 * runs and wall-clock MB/s sometimes lower; no reliable gain, so zlib's
 * defaults (memLevel 8, 16 KiB chunks) stay.
 */
export const SNAPSHOT_GZIP_LEVEL = 4;

/** A zlib Gzip stream at the level the sink can sustain while the target serializes. */
export function createSnapshotGzip(): Gzip {
  return createGzip({ level: SNAPSHOT_GZIP_LEVEL });
}
