/** One memory sample of a watched target (no imports of the queue's schemas: they embed it in triggers). */
import { z } from 'zod';

/** One memory sample of a target. Bytes; null where the runtime does not tell. */
export const WatchSampleSchema = z.strictObject({
  /** When it was taken (ms since the epoch, the watcher's clock). */
  t: z.number().int(),
  heapUsedBytes: z.number().nonnegative(),
  heapTotalBytes: z.number().nonnegative(),
  /** V8's heap limit (Node.js: heap_size_limit; Chromium: performance.memory.jsHeapSizeLimit). */
  heapLimitBytes: z.number().nonnegative().nullable(),
  /** Node.js only. */
  rssBytes: z.number().nonnegative().nullable(),
});
export type WatchSample = z.infer<typeof WatchSampleSchema>;
