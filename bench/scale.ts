/**
 * Scale, measured: thousands of targets on 1-minute schedules, against one
 * Redis and N `heapcap worker` processes, for a fixed window.
 *
 *   npm run bench -- scale                                   # defaults below
 *   npm run bench -- scale --targets=10000 --workers=2 --concurrency=16 --seconds=120 --profile
 *
 * (env: BENCH_SCALE_TARGETS, _WORKERS, _CONCURRENCY, _SECONDS, _EVERY, _OBJECTS, _SEMI_SPACE, _PROFILE=1;
 * --semi-space=MB runs the workers with that young generation instead of bin/heapcap's 2 MiB)
 *
 * The targets are one stub inspector process (bench/lib/stub-server.ts) that
 * answers every CDP method the capture engine sends with a ~7 KB snapshot, so
 * what is measured is heapcap's control plane: schedules, BullMQ, records,
 * locks, the worker's pipeline and the file sink, not V8's snapshot.
 *
 * Setup: Redis (the test kit's), the stub, a targets file with one `node`
 * target per stub path (`ws://127.0.0.1:PORT/t/<id>`), N workers
 * (`bin/heapcap worker`, file sink in a scratch directory, log level info to
 * a file). Then one schedule per target (`every: 1m`), created at an even pace
 * over one interval: BullMQ runs an `every` scheduler first at its creation
 * and then every interval after, so this spreads the turns evenly over the
 * minute, as schedules created over days would be. That first interval is
 * the warm-up; the window starts when the last schedule exists.
 *
 * Measured over the window: captures finished per second against the offered
 * rate (targets / interval), records created per second (the schedules
 * keeping up), queue wait p50/p99 (`timings.queued` of the records that
 * started in the window), the backlog at the end, CPU of Redis (INFO
 * used_cpu_sys + used_cpu_user), of the workers (all threads, schedstat), of
 * the stub and of the whole machine (/proc/stat), Redis memory per record and
 * per schedule (used_memory deltas), Redis's busiest commands (INFO
 * commandstats), and with --profile a CPU profile of worker 1's top functions.
 * --cluster runs it on a three-master Redis Cluster (CPU and memory summed over the masters).
 *
 * Baseline in the same run: BENCH_OLD_HEAPCAP=<an older build's bin/heapcap> (e.g. of a `git worktree add
 * --detach /tmp/heapcap-old <commit>`; its bin/heapcap installs and builds on first use) runs the same scenario
 * with that build's workers first, then with this build's, each on a fresh Redis and stub, and prints the
 * control-plane CPU per capture of both and their ratio. --rounds=N repeats the pair (old, new, then new, old, …)
 * against drift in the machine's load.
 *
 * The per-target memory sampler (HEAPCAP_SAMPLE_INTERVAL) is off (0) here unless --sample-interval=S sets it, so
 * the figures are the captures' own. --sample-interval=S --no-schedules measures the sampler alone: no
 * schedules, every target sampled every S seconds; the window starts after one interval (the first samples) and
 * reports samples per second, worker and Redis CPU per sample, the time from the workers' start to each target's
 * first sample, and Redis bytes per sample and per target.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { copyFile, readdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createQueue, CaptureOptionsSchema, type HeapcapQueue } from '@heapcap/state';
import { type Schedule } from '@heapcap/state/schedules';
import { commandEnv, HEAPCAP_BIN, REPO_ROOT, runHeapcap, startRedis, startRedisCluster, waitFor } from '@heapcap/testkit';
import { Checks, printTable, type Check } from './lib/report.ts';
import { withScratchDir } from './lib/tmp.ts';
import { sampleCpu, type CpuSample } from './lib/thread-cpu.ts';
import { startStubProcess, type StubProcess } from './lib/stub-process.ts';

interface Params {
  targets: number;
  workers: number;
  concurrency: number;
  seconds: number;
  everyS: number;
  objects: number;
  /** Workers' --max-semi-space-size in MiB; 0: bin/heapcap's own (2). */
  semiSpaceMb: number;
  profile: boolean;
  /** --cluster: a three-master Redis Cluster (redis+cluster://) instead of one Redis. */
  cluster: boolean;
  /** HEAPCAP_SAMPLE_INTERVAL of the workers in seconds; 0: off. */
  sampleIntervalS: number;
  /** --no-schedules: no schedules (measure the sampler alone). */
  schedules: boolean;
  /** Pairs of (old, new) runs when BENCH_OLD_HEAPCAP is set. */
  rounds: number;
}

/** The heapcap build whose workers a run starts. */
interface Build {
  label: string;
  bin: string;
  /** Its dist/heapcap.mjs, for a worker run with node flags of our own (--cpu-prof, --max-semi-space-size). */
  bundle: string;
}

/** `--name=value` from argv (bench/run.ts passes its arguments through), else BENCH_SCALE_NAME, else the default. */
function param(name: string, fallback: number): number {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  const raw = arg?.slice(name.length + 3) ?? process.env[`BENCH_SCALE_${name.toUpperCase().replace(/-/g, '_')}`];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name}=${raw}: expected a positive number`);
  return n;
}

function params(): Params {
  return {
    targets: Math.round(param('targets', 10_000)),
    workers: Math.round(param('workers', 2)),
    concurrency: Math.min(64, Math.round(param('concurrency', 16))),
    seconds: param('seconds', 120),
    everyS: param('every', 60),
    objects: Math.round(param('objects', 100)),
    semiSpaceMb: process.argv.some((a) => a.startsWith('--semi-space=')) || process.env['BENCH_SCALE_SEMI_SPACE'] !== undefined ? Math.round(param('semi-space', 2)) : 0,
    profile: process.argv.includes('--profile') || process.env['BENCH_SCALE_PROFILE'] === '1',
    cluster: process.argv.includes('--cluster') || process.env['BENCH_SCALE_CLUSTER'] === '1',
    sampleIntervalS: process.argv.some((a) => a.startsWith('--sample-interval=')) || process.env['BENCH_SCALE_SAMPLE_INTERVAL'] !== undefined ? param('sample-interval', 60) : 0,
    schedules: !(process.argv.includes('--no-schedules') || process.env['BENCH_SCALE_NO_SCHEDULES'] === '1'),
    rounds: Math.round(param('rounds', 1)),
  };
}

/** A child process this bench started; killed when the bench exits, whatever happens. */
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** The stub inspector in its own process (lib/stub-process.ts), killed with the other children. */
async function startStub(objects: number): Promise<StubProcess> {
  const stub = await startStubProcess(objects);
  track(stub.child);
  return stub;
}

async function stopChild(child: ChildProcess, timeoutMs: number): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await exited;
  clearTimeout(timer);
  return code;
}

/** The servers behind `q`: the one Redis, or every master of a cluster (their CPU and memory add up). */
function servers(q: HeapcapQueue): { info(section: string): Promise<string>; call(command: string, ...args: string[]): Promise<unknown> }[] {
  return 'nodes' in q.redis ? q.redis.nodes('master') : [q.redis];
}

/** INFO fields as numbers, summed over the servers. */
async function info(q: HeapcapQueue, section: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const text of await Promise.all(servers(q).map((r) => r.info(section)))) {
    for (const line of text.split('\r\n')) {
      const i = line.indexOf(':');
      if (i > 0) out[line.slice(0, i)] = (out[line.slice(0, i)] ?? 0) + Number(line.slice(i + 1));
    }
  }
  return out;
}

/** Machine CPU: busy and total jiffies from /proc/stat. */
async function machineCpu(): Promise<{ busy: number; total: number }> {
  const first = (await readFile('/proc/stat', 'utf8')).split('\n')[0] ?? '';
  const v = first.trim().split(/\s+/).slice(1).map(Number);
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  const total = v.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

interface Sample {
  at: number;
  redisCpuS: number;
  usedMemory: number;
  records: number;
  byStatus: Record<string, number>;
  captureJobs: Record<string, number>;
  scheduleJobs: Record<string, number>;
  workers: CpuSample[];
  stub: CpuSample;
  machine: { busy: number; total: number };
  load1: number;
}

async function sample(q: HeapcapQueue, workerPids: number[], stubPid: number): Promise<Sample> {
  const [cpu, mem, records, statuses, captureJobs, scheduleJobs, machine] = await Promise.all([
    info(q, 'cpu'),
    info(q, 'memory'),
    q.redis.zcard(q.keys.indexAll()),
    Promise.all(['queued', 'running', 'succeeded', 'failed'].map(async (s) => [s, await q.redis.zcard(q.keys.indexStatus(s as 'queued'))] as const)),
    q.bull.getJobCounts('waiting', 'active', 'delayed', 'completed', 'failed'),
    q.schedules.bull.getJobCounts('waiting', 'active', 'delayed'),
    machineCpu(),
  ]);
  return {
    at: performance.now(),
    redisCpuS: (cpu['used_cpu_sys'] ?? 0) + (cpu['used_cpu_user'] ?? 0),
    usedMemory: mem['used_memory'] ?? 0,
    records,
    byStatus: Object.fromEntries(statuses),
    captureJobs,
    scheduleJobs,
    workers: workerPids.map((pid) => sampleCpu(pid)),
    stub: sampleCpu(stubPid),
    machine,
    load1: loadavg()[0] ?? 0,
  };
}

/** CPU use between two samples, in cores. */
function cores(a: Sample, b: Sample): { redis: number; workers: number; workersMain: number; workersWaitMain: number; stub: number; machine: number } {
  const s = (b.at - a.at) / 1000;
  const sum = (f: (x: CpuSample) => number, xs: CpuSample[]): number => xs.reduce((acc, x) => acc + f(x), 0);
  const m = b.machine.total - a.machine.total;
  return {
    redis: (b.redisCpuS - a.redisCpuS) / s,
    workers: (sum((x) => x.allNs, b.workers) - sum((x) => x.allNs, a.workers)) / 1e9 / s,
    workersMain: (sum((x) => x.mainNs, b.workers) - sum((x) => x.mainNs, a.workers)) / 1e9 / s,
    workersWaitMain: (sum((x) => x.mainWaitNs, b.workers) - sum((x) => x.mainWaitNs, a.workers)) / 1e9 / s,
    stub: (b.stub.allNs - a.stub.allNs) / 1e9 / s,
    machine: m > 0 ? ((b.machine.busy - a.machine.busy) / m) * cpus().length : 0,
  };
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

function scheduleFor(id: string, targetId: string, everyS: number): Schedule {
  const now = new Date().toISOString();
  return {
    id,
    target: targetId,
    every: `${everyS}s`,
    everyMs: everyS * 1000,
    options: CaptureOptionsSchema.parse({}),
    retention: {},
    maxConcurrent: 1,
    enabled: true,
    reason: 'bench scale',
    owner: 'bench',
    createdAt: now,
    updatedAt: now,
  };
}

interface RecordRow {
  status: string;
  createdAtMs: number;
  startedAtMs: number;
  finishedAtMs: number;
  queuedMs: number | undefined;
  errorCode: string | undefined;
}

/** Every record created since `fromMs`, with what the window statistics need. */
async function readRecords(q: HeapcapQueue, fromMs: number): Promise<RecordRow[]> {
  const ids = await q.redis.zrangebyscore(q.keys.indexAll(), fromMs, '+inf');
  const rows: RecordRow[] = [];
  for (let i = 0; i < ids.length; i += 2_000) {
    const p = q.redis.pipeline();
    for (const id of ids.slice(i, i + 2_000)) p.hmget(q.keys.record(id), 'status', 'createdAt', 'startedAt', 'finishedAt', 'timings', 'error');
    for (const [, v] of (await p.exec()) ?? []) {
      const [status, createdAt, startedAt, finishedAt, timings, error] = (v as (string | null)[]).map((x) => x ?? '');
      const t = timings === '' ? undefined : (JSON.parse(timings as string) as { queued?: number });
      const e = error === '' ? undefined : (JSON.parse(error as string) as { code?: string });
      rows.push({
        status: status ?? '?',
        createdAtMs: Date.parse(createdAt ?? ''),
        startedAtMs: Date.parse(startedAt ?? ''),
        finishedAtMs: Date.parse(finishedAt ?? ''),
        queuedMs: t?.queued,
        errorCode: e?.code,
      });
    }
  }
  return rows;
}

/** Top self-time functions of a .cpuprofile. */
async function profileTop(file: string, n: number): Promise<{ rows: string[][]; idlePct: number; gcPct: number }> {
  const prof = JSON.parse(await readFile(file, 'utf8')) as { nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[]; samples: number[]; timeDeltas: number[] };
  const byId = new Map(prof.nodes.map((x) => [x.id, x.callFrame]));
  const self = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < prof.samples.length; i++) {
    const f = byId.get(prof.samples[i] as number);
    const dt = prof.timeDeltas[i] ?? 0;
    total += dt;
    if (f === undefined) continue;
    const where = f.url === '' ? '' : `${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
    const key = `${f.functionName || '(anonymous)'} ${where}`.trim();
    self.set(key, (self.get(key) ?? 0) + dt);
  }
  const pct = (k: string): number => (100 * (self.get(k) ?? 0)) / total;
  const busy = total - (self.get('(idle)') ?? 0);
  const rows = [...self.entries()]
    .filter(([k]) => k !== '(idle)')
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, us]) => [k.slice(0, 90), (us / 1000).toFixed(0), ((100 * us) / busy).toFixed(1)]);
  return { rows, idlePct: pct('(idle)'), gcPct: pct('(garbage collector)') };
}

/** What one run measured, for the comparison of builds. */
interface RunSummary {
  build: string;
  rate: number;
  redisMs: number;
  workersMs: number;
  waitP99: number;
  load: string;
  /** With --no-schedules: samples per second in the window. */
  sampleRate: number;
}

/** Builds `build` if its bin/heapcap finds it stale (a baseline worktree builds on first use). */
async function ensureBuilt(build: Build): Promise<void> {
  if (build.bin === HEAPCAP_BIN) {
    await runHeapcap(['--help'], { timeoutMs: 300_000 });
    return;
  }
  const child = spawn(build.bin, ['--help'], { stdio: ['ignore', 'ignore', 'inherit'] });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`${build.bin} --help exited ${code}`);
}

/** The scale bench (see the header). */
export async function scaleBench(): Promise<Check[]> {
  const p = params();
  const checks = new Checks('scale');
  const current: Build = { label: 'this build', bin: HEAPCAP_BIN, bundle: join(REPO_ROOT, 'dist/heapcap.mjs') };
  const oldBin = process.env['BENCH_OLD_HEAPCAP'];
  if (oldBin === undefined || oldBin === '') {
    await runOnce(p, current, checks, p.profile);
    return checks.list;
  }
  const old: Build = { label: 'old build', bin: resolve(oldBin), bundle: resolve(dirname(resolve(oldBin)), '../dist/heapcap.mjs') };
  console.log(`baseline: ${old.bin}; ${p.rounds} round(s) of (old, this), the order alternating`);
  const runs: RunSummary[] = [];
  for (let r = 0; r < p.rounds; r++) {
    for (const b of r % 2 === 0 ? [old, current] : [current, old]) {
      console.log(`\n--- round ${r + 1}: ${b.label} ---`);
      // Only this build's first run is profiled: its profile is the one to act on.
      runs.push(await runOnce(p, b, checks, p.profile && b === current && !runs.some((x) => x.build === current.label)));
    }
  }
  const sampling = !p.schedules;
  const unit = sampling ? 'sample' : 'capture';
  console.log(`\nbaseline against this build, control plane = workers + Redis CPU per ${unit}:`);
  printTable(
    ['run', 'build', `${unit}s/s`, `Redis ms/${unit}`, `workers ms/${unit}`, `control plane ms/${unit}`, 'p99 wait ms', 'load'],
    runs.map((x, i) => [String(i + 1), x.build, (sampling ? x.sampleRate : x.rate).toFixed(1), x.redisMs.toFixed(2), x.workersMs.toFixed(2), (x.redisMs + x.workersMs).toFixed(2), x.waitP99.toFixed(0), x.load]),
  );
  const med = (label: string, f: (x: RunSummary) => number): number => {
    const xs = runs.filter((x) => x.build === label).map(f).sort((a, b) => a - b);
    return xs.length % 2 === 1 ? (xs[(xs.length - 1) / 2] as number) : ((xs[xs.length / 2 - 1] as number) + (xs[xs.length / 2] as number)) / 2;
  };
  const cp = (x: RunSummary): number => x.redisMs + x.workersMs;
  for (const [what, f] of [
    ['control plane', cp],
    ['workers', (x: RunSummary) => x.workersMs],
    ['Redis', (x: RunSummary) => x.redisMs],
  ] as const) {
    const a = med(old.label, f);
    const b = med(current.label, f);
    console.log(`${what} ms per ${unit} (median): old ${a.toFixed(2)}, this build ${b.toFixed(2)}: ratio ${(b / a).toFixed(2)} (${Math.abs((1 - b / a) * 100).toFixed(0)}% ${b <= a ? 'less' : 'more'})`);
  }
  return checks.list;
}

/** One run of the scenario with `build`'s workers, on a fresh Redis and stub. */
async function runOnce(p: Params, build: Build, checks: Checks, profile: boolean): Promise<RunSummary> {
  const offered = p.schedules ? p.targets / p.everyS : 0;
  const sampling = !p.schedules;
  console.log(
    `scale: ${p.targets} targets ${p.schedules ? `every ${p.everyS} s (${offered.toFixed(1)} captures/s offered)` : 'without schedules'}${p.sampleIntervalS > 0 ? `, sampled every ${p.sampleIntervalS} s` : ''}, ` +
      `${p.workers} workers × concurrency ${p.concurrency} (${build.label}), ` +
      `window ${p.seconds} s after a ${sampling ? p.sampleIntervalS : p.everyS} s ramp${p.semiSpaceMb > 0 ? `, workers with --max-semi-space-size=${p.semiSpaceMb}` : ''}; ${cpus().length} cores, load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`,
  );
  return withScratchDir('scale', async (dir) => {
    // --cluster: three masters; heapcap's keys all hash to one of them (docs/scaling.md#redis-cluster).
    const redis = p.cluster ? await startRedisCluster() : await startRedis();
    const q = createQueue({ redisUrl: redis.url });
    const stub = await startStub(p.objects);
    const workers: ChildProcess[] = [];
    try {
      const targetIds = Array.from({ length: p.targets }, (_, i) => `scale-${String(i).padStart(6, '0')}`);
      const targetsFile = join(dir, 'targets.json');
      await writeFile(
        targetsFile,
        JSON.stringify({ targets: targetIds.map((id) => ({ id, kind: 'node', ws: `ws://127.0.0.1:${stub.port}/t/${id}`, labels: { service: 'scale', env: 'bench' } })) }),
      );
      const profDir = join(dir, 'prof');
      const env = (): Record<string, string> => ({
        HEAPCAP_REDIS_URL: redis.url,
        HEAPCAP_STORAGE: `file://${join(dir, 'captures')}`,
        HEAPCAP_TARGETS_FILE: targetsFile,
        HEAPCAP_WORKER_CONCURRENCY: String(p.concurrency),
        HEAPCAP_SCHEDULE_MIN_INTERVAL: `${Math.min(60, p.everyS)}s`,
        HEAPCAP_LOG_LEVEL: 'info',
        HEAPCAP_SPILL_DIR: join(dir, 'spill'),
        HEAPCAP_SAMPLE_INTERVAL: p.sampleIntervalS > 0 ? `${p.sampleIntervalS}s` : '0',
      });
      // bin/heapcap builds the bundle when a source is newer; the profiled worker runs the bundle itself
      // (node refuses --cpu-prof in NODE_OPTIONS), with bin/heapcap's flags.
      await ensureBuilt(build);
      const workersStartedAt = Date.now();
      for (let i = 0; i < p.workers; i++) {
        const log = createWriteStream(join(dir, `worker-${i}.log`));
        const profiled = profile && i === 0;
        const flags = [`--max-semi-space-size=${p.semiSpaceMb || 2}`, ...(profiled ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [])];
        const [cmd, args] = profiled || p.semiSpaceMb > 0 ? [process.execPath, [...flags, build.bundle, 'worker']] : [build.bin, ['worker']];
        const child = track(spawn(cmd, args, { cwd: dir, env: commandEnv(env()), stdio: ['ignore', 'pipe', 'pipe'] }));
        child.stdout!.pipe(log);
        child.stderr!.pipe(log);
        workers.push(child);
      }
      await waitFor(async () => (await q.workers.list()).length === p.workers && (await q.redis.hlen(q.keys.targets())) === p.targets, {
        timeoutMs: 120_000,
        intervalMs: 500,
        what: `${p.workers} workers up and ${p.targets} targets synced`,
      }).catch(async (err: unknown) => {
        const log = await readFile(join(dir, 'worker-0.log'), 'utf8').catch(() => '(no log)');
        throw new Error(`${(err as Error).message}; worker 1's log ends:\n${log.slice(-3000)}`);
      });
      const workerPids = workers.map((w) => w.pid as number);
      const s0 = await sample(q, workerPids, stub.pid);
      const t0 = Date.now();

      // Ramp: one schedule per target, created at an even pace over one interval.
      // Without schedules: one sample interval, in which every target gets its first sample (and its stream).
      const rampMs = p.everyS * 1000;
      let created = 0;
      if (sampling) await new Promise((r) => setTimeout(r, p.sampleIntervalS * 1000));
      while (p.schedules && created < p.targets) {
        const due = Math.min(p.targets, Math.ceil(((Date.now() - t0) / rampMs) * p.targets) + 1);
        const batch: Promise<unknown>[] = [];
        for (; created < due; created++) batch.push(q.schedules.put(scheduleFor(`s-${targetIds[created]}`, targetIds[created] as string, p.everyS)));
        await Promise.all(batch);
        await new Promise((r) => setTimeout(r, 50));
      }
      const rampS = (Date.now() - t0) / 1000;
      const s1 = await sample(q, workerPids, stub.pid);
      const turns1 = await q.schedules.runCounts();
      const stubAt1 = (await (await fetch(`http://127.0.0.1:${stub.port}/stats`)).json()) as { methods: Record<string, number> };
      await Promise.all(servers(q).map((r) => r.call('CONFIG', 'RESETSTAT')));
      const w0 = Date.now();
      console.log(sampling ? `first samples: ${stubAt1.methods['Runtime.getHeapUsage'] ?? 0} in ${rampS.toFixed(1)} s; window starts` : `ramp: ${p.targets} schedules in ${rampS.toFixed(1)} s; window starts`);

      // The window, with a progress line every 10 s.
      const series: Sample[] = [s1];
      const header = ['t s', 'records', 'queued', 'running', 'done', 'failed', 'capture jobs wait/active/delayed', 'schedule jobs wait/delayed', 'Redis', 'workers', 'stub', 'machine', 'load'];
      const rows: string[][] = [];
      while (Date.now() - w0 < p.seconds * 1000) {
        await new Promise((r) => setTimeout(r, Math.min(10_000, p.seconds * 1000 - (Date.now() - w0))));
        const s = await sample(q, workerPids, stub.pid);
        const prev = series[series.length - 1] as Sample;
        const c = cores(prev, s);
        series.push(s);
        const row = [
          ((Date.now() - w0) / 1000).toFixed(0),
          String(s.records),
          String(s.byStatus['queued']),
          String(s.byStatus['running']),
          String(s.byStatus['succeeded']),
          String(s.byStatus['failed']),
          `${s.captureJobs['waiting']}/${s.captureJobs['active']}/${s.captureJobs['delayed']}`,
          `${s.scheduleJobs['waiting']}/${s.scheduleJobs['delayed']}`,
          c.redis.toFixed(2),
          c.workers.toFixed(2),
          c.stub.toFixed(2),
          c.machine.toFixed(2),
          s.load1.toFixed(1),
        ];
        rows.push(row);
        console.log(`  ${header.map((h, i) => `${h} ${row[i]}`).join(', ')}`);
      }
      const s2 = series[series.length - 1] as Sample;
      const w1 = Date.now();
      const windowS = (w1 - w0) / 1000;
      const commandstats = (await Promise.all(servers(q).map((r) => r.info('commandstats')))).join('\r\n');
      const turns2 = await q.schedules.runCounts();
      const workerHwmMb = await Promise.all(workerPids.map(async (pid) => Number(/VmHWM:\s+(\d+)/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024));
      const recordHashes = await q.redis.zrange(q.keys.indexAll(), -50, -1);
      const hashBytes = await Promise.all(recordHashes.map((id) => q.redis.call('MEMORY', 'USAGE', q.keys.record(id), 'SAMPLES', '0') as Promise<number>));
      const stubStats = (await (await fetch(`http://127.0.0.1:${stub.port}/stats`)).json()) as { snapshots: number; unknown: Record<string, number>; overlaps: number; connections: number; methods: Record<string, number> };

      // A sampled target's lease, while its holder runs (it hands it back when it stops).
      const leaseBytes = sampling ? Number(await q.redis.call('MEMORY', 'USAGE', q.keys.watchLease(targetIds[0] as string), 'SAMPLES', '0')) : 0;
      // Stop the workers (SIGTERM: drain), then read what they recorded.
      const codes = await Promise.all(workers.map((w) => stopChild(w, 40_000)));
      // Time from the workers' start to each target's first stored sample (its stream's oldest entry id is its time).
      const firstSampleS: number[] = [];
      if (sampling) {
        const pipeline = q.redis.pipeline();
        for (const id of targetIds) pipeline.xrange(q.keys.watchSamples(id), '-', '+', 'COUNT', 1);
        for (const [, entries] of (await pipeline.exec()) ?? []) {
          const first = (entries as [string, string[]][] | null)?.[0];
          if (first !== undefined) firstSampleS.push((Number(first[0].split('-')[0]) - workersStartedAt) / 1000);
        }
        firstSampleS.sort((a, b) => a - b);
      }
      const records = await readRecords(q, t0 - 1_000);

      const inWindow = (ms: number): boolean => ms >= w0 && ms < w1;
      const finished = records.filter((r) => inWindow(r.finishedAtMs));
      const succeeded = finished.filter((r) => r.status === 'succeeded');
      const failed = finished.filter((r) => r.status === 'failed');
      const createdIn = records.filter((r) => inWindow(r.createdAtMs)).length;
      const waits = records
        .filter((r) => inWindow(r.startedAtMs) && r.queuedMs !== undefined)
        .map((r) => r.queuedMs as number)
        .sort((a, b) => a - b);
      const c = cores(s1, s2);
      const rate = finished.length / windowS;
      const redisCpuMsPerCapture = (c.redis * 1000) / rate;
      const workerCpuMsPerCapture = (c.workers * 1000) / rate;
      const stubCpuMsPerCapture = (c.stub * 1000) / rate;
      const dRecords = s2.records - s1.records;
      const perRecord = dRecords > 0 ? (s2.usedMemory - s1.usedMemory) / dRecords : NaN;
      const perSchedule = (s1.usedMemory - s0.usedMemory - s1.records * perRecord) / p.targets;
      // The sampler: each sample is one Runtime.getHeapUsage at the stub (no capture runs without schedules).
      const samples = (stubStats.methods['Runtime.getHeapUsage'] ?? 0) - (stubAt1.methods['Runtime.getHeapUsage'] ?? 0);
      const sampleRate = samples / windowS;
      const firstSampleBytes = (s1.usedMemory - s0.usedMemory) / p.targets;
      const errors = new Map<string, number>();
      for (const r of failed) errors.set(r.errorCode ?? '?', (errors.get(r.errorCode ?? '?') ?? 0) + 1);

      console.log('\nwindow, every 10 s (cores: CPU seconds per second):');
      printTable(header, rows);
      console.log('');
      printTable(
        ['measure', 'value'],
        [
          ['targets / schedules', `${p.targets} / ${p.targets} (every ${p.everyS} s)`],
          ['workers × concurrency', `${p.workers} × ${p.concurrency}`],
          ['offered captures/s', offered.toFixed(1)],
          [
            'schedule turns in the window: created / coalesced / skipped',
            `${turns2.created - turns1.created} / ${turns2.coalesced - turns1.coalesced} / ${turns2.skipped - turns1.skipped} (coalesced: the target's previous capture was still queued, so the turn joined it)`,
          ],
          ['new records/s in the window', (createdIn / windowS).toFixed(1)],
          ['captures finished/s in the window (sustained)', `${rate.toFixed(1)} (${succeeded.length} succeeded, ${failed.length} failed in ${windowS.toFixed(0)} s)`],
          ['queue wait p50 / p99 / max ms (timings.queued, started in the window)', `${quantile(waits, 0.5).toFixed(0)} / ${quantile(waits, 0.99).toFixed(0)} / ${(waits[waits.length - 1] ?? NaN).toFixed(0)} (n=${waits.length})`],
          ['backlog at the end: queued records, capture jobs waiting', `${s2.byStatus['queued']}, ${s2.captureJobs['waiting']}`],
          ['Redis CPU (cores)', `${c.redis.toFixed(3)}: ${sampling ? '' : `${redisCpuMsPerCapture.toFixed(2)} ms per capture, `}${((c.redis * 60_000) / p.targets).toFixed(2)} ms per ${sampling ? 'target' : 'schedule'}-minute`],
          ['workers CPU (cores, all threads / main threads)', `${c.workers.toFixed(2)} / ${c.workersMain.toFixed(2)}: ${sampling ? '(per sample below)' : `${workerCpuMsPerCapture.toFixed(1)} ms per capture`}`],
          ['workers main threads waiting for a CPU (cores)', c.workersWaitMain.toFixed(2)],
          ['workers peak RSS MB', workerHwmMb.map((m) => m.toFixed(0)).join(', ')],
          ['stub inspector CPU (cores)', `${c.stub.toFixed(2)}: ${sampling ? '' : `${stubCpuMsPerCapture.toFixed(2)} ms per capture`}`],
          ['machine CPU busy (cores of ' + String(cpus().length) + ')', c.machine.toFixed(2)],
          ['Redis used_memory at the end', `${(s2.usedMemory / 1e6).toFixed(1)} MB`],
          ['Redis bytes per record (used_memory Δ / records Δ in the window)', `${perRecord.toFixed(0)} (incl. BullMQ's finished jobs, kept up to 10,000; record hash alone ${(hashBytes.reduce((a, b) => a + Number(b), 0) / hashBytes.length).toFixed(0)})`],
          ['Redis bytes per schedule (ramp Δ minus its records)', perSchedule.toFixed(0)],
          ['load average (1 min) during the window', `${Math.min(...series.map((s) => s.load1)).toFixed(1)}-${Math.max(...series.map((s) => s.load1)).toFixed(1)}`],
        ],
      );
      if (sampling) {
        // A target's stream keeps ceil(HEAPCAP_WATCH_RETENTION / interval) samples (24 h by default). A window holds too
        // few samples per target for used_memory to say what one costs: fill a scratch stream with `keep` samples
        // of the fields the watcher writes (watch/store.ts addSample) and ask MEMORY USAGE.
        const keep = Math.ceil(86_400 / p.sampleIntervalS);
        const probe = `${q.keys.prefix}:bench:stream-probe`;
        const fill = q.redis.pipeline();
        for (let i = 0; i < keep; i++) {
          const t = Date.now() - (keep - i) * p.sampleIntervalS * 1000;
          fill.xadd(probe, `${t}-0`, 't', String(t), 'used', String(40e6 + i * 1013), 'total', String(60e6 + i * 7), 'limit', String(4345298944), 'rss', String(120e6 + i * 4093));
        }
        await fill.exec();
        const streamBytes = Number(await q.redis.call('MEMORY', 'USAGE', probe, 'SAMPLES', '0'));
        await q.redis.del(probe);
        const bytesPerSample = streamBytes / keep;
        printTable(
          ['sampler (no schedules)', 'value'],
          [
            ['samples/s in the window (Runtime.getHeapUsage at the stub)', `${sampleRate.toFixed(1)} (offered ${(p.targets / p.sampleIntervalS).toFixed(1)}: ${p.targets} targets every ${p.sampleIntervalS} s)`],
            ['workers CPU per sample', `${((c.workers * 1000) / sampleRate).toFixed(3)} ms`],
            ['Redis CPU per sample', `${((c.redis * 1000) / sampleRate).toFixed(3)} ms`],
            [
              "first sample after the workers' start (targets sampled; p50 / p99 / last)",
              `${firstSampleS.length} of ${p.targets}; ${[0.5, 0.99, 1].map((f) => (firstSampleS[Math.min(firstSampleS.length - 1, Math.floor(f * firstSampleS.length))] ?? NaN).toFixed(1)).join(' / ')} s`,
            ],
            ['Redis bytes per target after its first sample (stream, lease)', firstSampleBytes.toFixed(0)],
            [`Redis bytes per sample (MEMORY USAGE of a stream of ${keep} samples / ${keep})`, bytesPerSample.toFixed(1)],
            [`Redis bytes per target at 24 h retention (${keep} samples, with the lease)`, `${((streamBytes + leaseBytes) / 1024).toFixed(0)} KiB (lease ${leaseBytes} B)`],
          ],
        );
      }
      if (errors.size > 0) console.log(`failures by code: ${[...errors].map(([k, v]) => `${k} ${v}`).join(', ')}`);

      // Redis's busiest commands over the window.
      const cmds = commandstats
        .split('\r\n')
        .map((l) => /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(l))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => ({ cmd: m[1] as string, calls: Number(m[2]), usec: Number(m[3]) }))
        .sort((a, b) => b.usec - a.usec);
      const redisCpuMs = c.redis * windowS * 1000;
      console.log('\nRedis commands in the window (INFO commandstats). evalsha = the Lua scripts of BullMQ and heapcap; the commands a script calls are');
      console.log('counted in its evalsha time AND on their own line, so the shares overlap. CPU ms is time inside the command (wall: on a loaded host');
      console.log('it includes time Redis waited for a CPU), shown against the Redis CPU time measured over the window:');
      printTable(
        ['command', 'calls', 'calls per capture', 'CPU ms', 'of Redis CPU'],
        cmds.slice(0, 12).map((x) => [x.cmd, String(x.calls), (x.calls / finished.length).toFixed(1), (x.usec / 1000).toFixed(0), `${((100 * x.usec) / 1000 / redisCpuMs).toFixed(1)}%`]),
      );

      // What saturates first.
      const ncpu = cpus().length;
      const verdict =
        rate >= 0.95 * offered
          ? `sustained the offered ${offered.toFixed(0)}/s`
          : c.redis > 0.85
            ? `Redis: ${c.redis.toFixed(2)} of its one core`
            : c.machine > 0.9 * ncpu
              ? `the machine's ${ncpu} cores (${c.machine.toFixed(2)} busy: workers ${c.workers.toFixed(2)}, Redis ${c.redis.toFixed(2)}, stub ${c.stub.toFixed(2)})`
              : `neither Redis nor the CPUs (workers ${c.workers.toFixed(2)} cores): concurrency or a wait inside the workers`;
      if (!sampling) console.log(`\nsaturates first: ${verdict}`);
      if (!sampling)
        console.log(
        `per core: a worker core finishes ~${(1000 / workerCpuMsPerCapture).toFixed(0)} captures/s of this size; one Redis core ~${(1000 / redisCpuMsPerCapture).toFixed(0)} captures/s ` +
          `(≈ ${((1000 / redisCpuMsPerCapture) * p.everyS).toFixed(0)} targets on ${p.everyS} s schedules, ≈ ${((1000 / redisCpuMsPerCapture) * 1800).toFixed(0)} on 30 min ones)`,
      );

      if (p.profile) {
        const files = (await readdir(profDir).catch(() => [])).filter((f) => f.endsWith('.cpuprofile'));
        if (files.length === 0) console.log('no CPU profile was written (did worker 1 exit cleanly?)');
        else {
          const kept = join(tmpdir(), 'heapcap-scale-worker.cpuprofile');
          await copyFile(join(profDir, files[0] as string), kept);
          const top = await profileTop(kept, 20);
          console.log(`\nworker 1 CPU profile (${kept}; whole run incl. start-up and ramp): idle ${top.idlePct.toFixed(0)}%, GC ${top.gcPct.toFixed(1)}%; top self time:`);
          printTable(['function', 'self ms', '% of busy'], top.rows);
        }
      }

      checks.expect(Object.keys(stubStats.unknown).length === 0, 'the stub answered every method the engine sent', JSON.stringify(stubStats.unknown));
      checks.expect(stubStats.overlaps === 0, 'no target was snapshotted by two sessions at once (per-target lock)', `${stubStats.overlaps} overlaps of ${stubStats.snapshots}`);
      if (sampling) checks.expect(samples > 0, 'the sampler sampled the targets', `${samples} samples in the window`);
      else checks.expect(finished.length > 0 && failed.length === 0, 'no capture failed', errors.size === 0 ? `${finished.length} finished` : [...errors].map(([k, v]) => `${k} ${v}`).join(', '));
      checks.expect(codes.every((code) => code === 0), 'every worker drained and exited 0 on SIGTERM', codes.join(', '));
      return {
        build: build.label,
        rate,
        redisMs: (c.redis * 1000) / (sampling ? sampleRate : rate),
        workersMs: (c.workers * 1000) / (sampling ? sampleRate : rate),
        waitP99: quantile(waits, 0.99),
        load: `${Math.min(...series.map((s) => s.load1)).toFixed(1)}-${Math.max(...series.map((s) => s.load1)).toFixed(1)}`,
        sampleRate,
      };
    } finally {
      for (const w of workers) await stopChild(w, 5_000);
      await stopChild(stub.child, 5_000);
      await q.close();
      await redis.stop();
    }
  });
}
