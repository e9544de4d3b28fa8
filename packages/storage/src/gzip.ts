/** The gzip stage every sink puts between the digest and the store. */
import { createGzip, type Gzip } from 'node:zlib';
import { releaseAfterGzip } from './chunk-release.ts';

/**
 * Level 2, chosen by measurement: on a 2-core host the sink shares the second
 * core with the target's inspector thread while the target's main thread
 * serializes on the first, so every CPU-second gzip saves is one the capture
 * does not have to find (or take from the target).
 *
 * bench/gzip-level.ts (Node 20.20, zlib 1.3.1, this 2-core VM, a 221 MB
 * snapshot written by v8.writeHeapSnapshot, 100 KiB chunks like CDP, one core
 * kept busy as the target would, load 5.5; median of 3):
 *
 * | level | sink path (digest+gzip+file) MB per CPU-s | stored vs level 6 |
 * |------:|-----------------------------------------:|------------------:|
 * |     1 |                                      216 |             1.29x |
 * |     2 |                                      217 |             1.25x |
 * |     3 |                                      171 |             1.22x |
 * |     4 |                                      158 |             1.15x |
 * |     5 |                                      131 |             1.02x |
 * |     6 |                                       76 |             1.00x |
 *
 * The same on the heap holder's 175 MB snapshot (gzip alone, 5 runs): level 2
 * 307 MB/CPU-s and 6.83x, level 4 226 MB/CPU-s and 7.33x. Level 2 costs ~27%
 * less CPU than level 4 for ~8% more bytes stored; level 1 is no cheaper and
 * larger. End to end (a 525 MB capture into a directory, load 5-6) the capturer
 * used 3.3-4.0 CPU-s at level 2 against 4.0-6.3 at level 4.
 * memLevel 9 and 64 KiB chunks: no reliable gain, so zlib's defaults stay.
 */
export const SNAPSHOT_GZIP_LEVEL = 2;

/**
 * A zlib Gzip stream at the level the sink can sustain while the target
 * serializes. It gives each input chunk back to the engine's block pool once
 * consumed (chunk-release.ts): put it after every other stage that reads the
 * uncompressed bytes.
 */
export function createSnapshotGzip(): Gzip {
  return releaseAfterGzip(createGzip({ level: SNAPSHOT_GZIP_LEVEL }));
}
