/**
 * Capturer memory bench: peak RSS (VmHWM) of the capturing process for a
 * snapshot of at least 500 MB, our engine streaming into the filesystem sink
 * (gzip, sha256, temp file + rename: what `heapcap capture --out` does; and
 * once more with --no-gzip) against a naive chrome-remote-interface client
 * that keeps every chunk in an array and writes them at the end.
 *
 * Each capturer runs in its own child process (bench/lib/rss-*.ts) so VmHWM
 * is its own; all capture the same idle target (a Node 20 heap holder with
 * ~300 MB of objects, deterministic, so every snapshot has the same size).
 * Each child also reports its VmHWM before capturing (the tsx loader and the
 * modules) and its peaks of V8 heap and Buffer memory, to show where the
 * memory went.
 *
 * Expected: ours < 150 MB whatever the snapshot size (the stream's in-memory
 * buffer is capped at 32 MiB and spills to disk beyond); the naive client
 * needs more than the snapshot size.
 *
 * Run: node --import tsx bench/run.ts rss   (BENCH_RSS_HEAP_MB, default 300)
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
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

const CAPTURERS = [
  // What users run: bin/heapcap (the bundle on plain node, small young generation).
  { name: 'ours: heapcap CLI, gzip', helper: './rss-cli.ts', args: ['gzip'] },
  { name: 'ours: heapcap CLI, no gzip', helper: './rss-cli.ts', args: ['no-gzip'] },
  { name: 'naive: chunks.push, write at end', helper: './rss-naive.ts', args: [] },
] as const;

const kbMb = (kb: number | undefined): string => mb(kb === undefined ? undefined : kb * 1024);

/** Runs the RSS bench; returns its checks. */
export async function rssBench(): Promise<Check[]> {
  const checks = new Checks('rss');
  const results: HelperResult[] = [];
  await withScratchDir('rss', async (dir) => {
    console.log(`target: Node 20 heap holder with HEAP_MB=${HEAP_MB} (building it takes a while)`);
    await withTarget(heapHolderTarget('system', HEAP_MB), async ({ inspect }) => {
      // Ours writes a directory tree under `out`, the naive client one file named `out`.
      const out = join(dir, 'out');
      for (const c of CAPTURERS) {
        try {
          const r = await runHelper<HelperResult>(c.helper, [inspect, out, ...c.args], CAPTURE_TIMEOUT_MS);
          console.log(`  ${c.name}: peak RSS ${kbMb(r.peakRssKb)} MB, snapshot ${mb(r.bytes)} MB in ${ms(r.ms)} ms`);
          results.push(r);
        } finally {
          await rm(out, { recursive: true, force: true });
        }
      }
    });
  });
  const [ours, oursPlain, naive] = results;
  if (ours === undefined || oursPlain === undefined || naive === undefined) throw new Error('a capturer produced no result');

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
  console.log(`\nnaive / ours (gzip) peak RSS: ${ratio(naive.peakRssKb / ours.peakRssKb)}; naive / ours (no gzip): ${ratio(naive.peakRssKb / oursPlain.peakRssKb)}\n`);

  checks.expect(ours.bytes >= MIN_SNAPSHOT_BYTES, 'snapshot is at least 500 MB', `${mb(ours.bytes)} MB`);
  checks.expect(ours.peakRssKb * 1024 < OURS_LIMIT_BYTES, 'ours (heapcap CLI, gzip): peak RSS < 150 MB', `${kbMb(ours.peakRssKb)} MB`);
  checks.expect(oursPlain.peakRssKb * 1024 < OURS_LIMIT_BYTES, 'ours (heapcap CLI, no gzip): peak RSS < 150 MB', `${kbMb(oursPlain.peakRssKb)} MB`);
  checks.expect(naive.peakRssKb > ours.peakRssKb, 'naive client peaks higher than ours', `${kbMb(naive.peakRssKb)} vs ${kbMb(ours.peakRssKb)} MB`);
  return checks.list;
}
