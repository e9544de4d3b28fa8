/**
 * The floor under a scheduled capture's control-plane CPU: what the parts
 * every capture has cost on this machine at the rates bench/scale.ts runs,
 * with none of heapcap's own bookkeeping around them.
 *
 *   npm run bench -- capture-floor            # rates 33.3, 83.3 and 166.7 per second
 *   npm run bench -- capture-floor --seconds=20
 *
 * Parts (bench/lib/floor-part.ts, each in its own process, paced on an absolute
 * clock, at most 16 in flight):
 *   - a bare BullMQ job: add, a no-op processor, completed (the producer's and
 *     the worker's CPU, and Redis's). A scheduled turn in heapcap is two jobs
 *     (the scheduler's `schedule-run` and the `capture`); the floor counts one.
 *   - the engine's capture of one stub target over CDP (the stub of
 *     bench/scale.ts: a ~7 KB snapshot), and the protocol's least for the same
 *     snapshot (open the WebSocket, enable, take, drop the chunks, close).
 *   - three durable files: temp file, write, fsync, close, rename, for the
 *     snapshot, the summary and the manifest, then one directory fsync.
 *   - a minimal capture worker: a BullMQ job whose processor takes the
 *     snapshot with the protocol's least and writes the three files, in one
 *     process.
 *
 * Baseline in the same run: the same bare BullMQ jobs unpaced (added 50 at a
 * time, as fast as they go). The ratio paced / unpaced is what a job pays for
 * arriving alone: each one wakes the worker, Redis and their sockets by itself.
 *
 * The floor is the minimal worker (one process shares its wake-ups between
 * the parts), printed beside the parts' sum. It leaves out everything heapcap
 * adds: the schedule's own job, records, locks, the lease, facts, headroom,
 * gzip, digest, summary, logs. bench/scale.ts measures heapcap's whole control
 * plane per capture at the same rates. The 5 ms line is issue 28's goal.
 */
import { join } from 'node:path';
import { startRedis, type RedisServer } from '@heapcap/testkit';
import { runHelper } from './lib/child.ts';
import { startStubProcess, type StubProcess } from './lib/stub-process.ts';
import { Checks, printTable, type Check } from './lib/report.ts';
import { withScratchDir } from './lib/tmp.ts';

interface PartResult {
  part: 'job' | 'cdp' | 'ws' | 'files' | 'all';
  rate: number;
  n: number;
  cpuMs: number;
  redisCpuMs: number;
  /** Operations that ended well, that failed, and the first failure. */
  done: number;
  failed: number;
  firstError: string;
  wallS: number;
}

const GOAL_MS = 5;
const RATES = [1000 / 30, 5000 / 60, 10_000 / 60];

function seconds(): number {
  const arg = process.argv.find((a) => a.startsWith('--seconds='))?.slice('--seconds='.length) ?? process.env['BENCH_FLOOR_SECONDS'];
  const s = arg === undefined ? 15 : Number(arg);
  if (!Number.isFinite(s) || s <= 0) throw new Error(`--seconds=${arg}: expected a positive number`);
  return s;
}

async function part(name: PartResult['part'], rate: number, n: number, ...where: string[]): Promise<PartResult> {
  return runHelper<PartResult>('floor-part.ts', [name, String(rate), String(n), ...where], 10 * 60_000);
}

const perOp = (r: PartResult): number => (r.cpuMs + r.redisCpuMs) / r.n;
const fmt = (v: number): string => v.toFixed(2);

export async function captureFloorBench(): Promise<Check[]> {
  const checks = new Checks('capture-floor');
  const window = seconds();
  let redis: RedisServer | undefined;
  let stub: StubProcess | undefined;
  try {
    redis = await startRedis();
    stub = await startStubProcess(100);
    const { port } = stub;
    const redisUrl = redis.url;
    console.log(`capture-floor: rates ${RATES.map((r) => r.toFixed(1)).join(', ')} per second, ${window} s each; Redis ${redisUrl}, stub port ${port}`);
    const bulk = await part('job', 0, 5_000, redisUrl);
    checks.expect(bulk.done === bulk.n && bulk.failed === 0, 'the unpaced bare jobs all completed', `${bulk.done} of ${bulk.n} ended well, ${bulk.failed} failed${bulk.firstError === '' ? '' : ` (first: ${bulk.firstError})`}`);
    const rows: string[][] = [];
    for (const rate of RATES) {
      const n = Math.round(rate * window);
      const job = await part('job', rate, n, redisUrl);
      const cdp = await part('cdp', rate, n, String(port));
      const ws = await part('ws', rate, n, String(port));
      const files = await withScratchDir('floor', (dir) => part('files', rate, n, join(dir, 'store')));
      const minimal = await withScratchDir('floor', (dir) => part('all', rate, n, redisUrl, String(port), join(dir, 'store')));
      for (const r of [job, cdp, ws, files, minimal]) {
        const detail = `${r.done} of ${n} ended well, ${r.failed} failed${r.firstError === '' ? '' : ` (first: ${r.firstError})`}, in ${r.wallS.toFixed(1)} s`;
        checks.expect(r.done === n && r.failed === 0, `${r.part} at ${rate.toFixed(1)}/s finished every operation`, detail);
      }
      const sum = perOp(job) + perOp(ws) + perOp(files);
      const floor = perOp(minimal);
      rows.push([
        rate.toFixed(1),
        `${fmt(job.cpuMs / job.n)} + ${fmt(job.redisCpuMs / job.n)}`,
        `${(perOp(job) / perOp(bulk)).toFixed(1)}x`,
        fmt(perOp(cdp)),
        fmt(perOp(ws)),
        fmt(perOp(files)),
        fmt(sum),
        `${fmt(minimal.cpuMs / minimal.n)} + ${fmt(minimal.redisCpuMs / minimal.n)} = ${fmt(floor)}`,
        `${(floor / GOAL_MS).toFixed(2)}x`,
      ]);
    }
    console.log(`\nCPU ms per operation (all threads of the part's process; Redis's for the job). A bare job unpaced (5,000, added 50 at a time): ${fmt(bulk.cpuMs / bulk.n)} + ${fmt(bulk.redisCpuMs / bulk.n)} ms.`);
    printTable(['captures/s', 'BullMQ job (client + Redis)', 'job paced / unpaced', 'engine CDP session', 'protocol least', 'three durable files', 'job + least + files', 'minimal worker (client + Redis)', `that / the ${GOAL_MS} ms goal`], rows);
  } finally {
    stub?.child.kill('SIGTERM');
    await redis?.stop();
  }
  return checks.list;
}
