/**
 * Capturer memory bench: peak RSS (VmHWM) of the capturing process for a
 * snapshot of at least 500 MB, our engine streaming into the filesystem sink
 * (gzip, sha256, temp file + rename: what `heapcap capture --out` does; and
 * once more with --no-gzip) and into MinIO (`--out s3://…`, multipart upload,
 * with and without gzip), against a naive chrome-remote-interface client
 * that keeps every chunk in an array and writes them at the end.
 *
 * Each capturer runs in its own child process (bench/lib/rss-*.ts) so VmHWM
 * is its own; all capture the same idle target (a Node 20 heap holder with
 * ~300 MB of objects, deterministic, so every snapshot has the same size).
 * Each child also reports its VmHWM before capturing (the tsx loader and the
 * modules) and its peaks of V8 heap and Buffer memory, to show where the
 * memory went.
 *
 * Expected: ours < 150 MB whatever the snapshot size, into a directory or into
 * MinIO (the stream's in-memory buffer is capped at 32 MiB of reused blocks
 * and spills to disk beyond; the upload holds at most queueSize + 1 reused part
 * buffers); the naive client needs more than the snapshot size.
 *
 * Run: node --import tsx bench/run.ts rss   (BENCH_RSS_HEAP_MB, default 300)
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { startMinio } from '@heapcap/testkit';
import { runHelper } from './lib/child.ts';
import type { MemFacts } from './lib/mem-watch.ts';
import { heapHolderTarget, withTarget } from './lib/targets.ts';
import { withScratchDir } from './lib/tmp.ts';
import { Checks, mb, ms, printTable, ratio, type Check } from './lib/report.ts';

/** 300 MB of heap-holder objects gave a 518-534 MB snapshot on Node 20. */
const HEAP_MB = Number(process.env.BENCH_RSS_HEAP_MB ?? 300);
const MIN_SNAPSHOT_BYTES = 500e6;
const OURS_LIMIT_BYTES = 150e6;
/** A 518 MB capture takes 35 s on a quiet machine, 3 min on a loaded one. */
const CAPTURE_TIMEOUT_MS = 20 * 60_000;

interface HelperResult extends MemFacts {
  bytes: number;
  /** Ours: bytes on disk (after gzip when on). */
  storedBytes?: number;
  ms: number;
  spilledBytes?: number;
  peakBufferBytes?: number;
}

const BUCKET = 'heapcap-rss';

/** `s3` captures go into MinIO (`--out s3://…`), the others into the scratch directory. */
const CAPTURERS = [
  // What users run: bin/heapcap (the bundle on plain node, small young generation).
  { name: 'ours: heapcap CLI, gzip', helper: './rss-cli.ts', args: ['gzip'], s3: false, ours: true },
  { name: 'ours: heapcap CLI, no gzip', helper: './rss-cli.ts', args: ['no-gzip'], s3: false, ours: true },
  { name: 'ours: heapcap CLI into MinIO, gzip', helper: './rss-cli.ts', args: ['gzip'], s3: true, ours: true },
  { name: 'ours: heapcap CLI into MinIO, no gzip', helper: './rss-cli.ts', args: ['no-gzip'], s3: true, ours: true },
  { name: 'ours: heapcap CLI into MinIO over CDP, gzip', helper: './rss-cli.ts', args: ['gzip-cdp'], s3: true, ours: true },
  { name: 'naive: chunks.push, write at end', helper: './rss-naive.ts', args: [], s3: false, ours: false },
] as const;

const kbMb = (kb: number | undefined): string => mb(kb === undefined ? undefined : kb * 1024);

/** Runs the RSS bench; returns its checks. */
export async function rssBench(): Promise<Check[]> {
  const checks = new Checks('rss');
  const results: HelperResult[] = [];
  const minio = await startMinio();
  // Inherited by the helpers (and bin/heapcap under them).
  Object.assign(process.env, {
    AWS_ACCESS_KEY_ID: minio.accessKey,
    AWS_SECRET_ACCESS_KEY: minio.secretKey,
    AWS_REGION: minio.region,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  });
  try {
    await minio.createBucket(BUCKET);
    await withScratchDir('rss', async (dir) => {
      console.log(`target: Node 20 heap holder with HEAP_MB=${HEAP_MB} (building it takes a while)`);
      await withTarget(heapHolderTarget('system', HEAP_MB), async ({ inspect }) => {
        // Ours writes a directory tree under `out`, the naive client one file named `out`.
        const out = join(dir, 'out');
        for (const [i, c] of CAPTURERS.entries()) {
          const args = c.s3 ? [inspect, `s3://${BUCKET}/run-${i}`, ...c.args, minio.endpoint] : [inspect, out, ...c.args];
          try {
            const r = await runHelper<HelperResult>(c.helper, args, CAPTURE_TIMEOUT_MS);
            console.log(`  ${c.name}: peak RSS ${kbMb(r.peakRssKb)} MB, snapshot ${mb(r.bytes)} MB in ${ms(r.ms)} ms`);
            results.push(r);
          } finally {
            await rm(out, { recursive: true, force: true });
          }
        }
      });
    });
  } finally {
    await minio.stop();
  }
  const naive = results[CAPTURERS.length - 1];
  const ours = results.slice(0, -1);
  if (naive === undefined || ours.length !== CAPTURERS.length - 1) throw new Error('a capturer produced no result');

  console.log('');
  printTable(
    ['capturer', 'snapshot MB', 'stored MB', 'capture ms', 'peak RSS MB', 'RSS before capture MB', 'peak V8 heap MB', 'peak Buffers MB', 'spilled MB', 'peak RSS / snapshot'],
    CAPTURERS.map((c, i) => {
      const r = results[i] as HelperResult;
      return [
        c.name,
        mb(r.bytes),
        mb(r.storedBytes ?? r.bytes),
        ms(r.ms),
        kbMb(r.peakRssKb),
        kbMb(r.startRssKb),
        kbMb(r.peakHeapUsedKb),
        kbMb(r.peakArrayBuffersKb),
        mb(r.spilledBytes),
        ratio((r.peakRssKb * 1024) / r.bytes),
      ];
    }),
  );
  const first = ours[0] as HelperResult;
  console.log(`\nnaive / ours peak RSS: ${ours.map((r, i) => `${ratio(naive.peakRssKb / r.peakRssKb)} (${CAPTURERS[i]?.name ?? ''})`).join(', ')}\n`);

  checks.expect(first.bytes >= MIN_SNAPSHOT_BYTES, 'snapshot is at least 500 MB', `${mb(first.bytes)} MB`);
  for (const [i, r] of ours.entries()) {
    checks.expect(r.peakRssKb * 1024 < OURS_LIMIT_BYTES, `${CAPTURERS[i]?.name ?? ''}: peak RSS < 150 MB`, `${kbMb(r.peakRssKb)} MB`);
  }
  checks.expect(ours.every((r) => naive.peakRssKb > r.peakRssKb), 'naive client peaks higher than ours', `${kbMb(naive.peakRssKb)} vs ${ours.map((r) => kbMb(r.peakRssKb)).join(' / ')} MB`);
  return checks.list;
}
