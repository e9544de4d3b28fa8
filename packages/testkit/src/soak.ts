/**
 * The soak (issue 25): captures back to back through `bin/heapcap serve`
 * (real Redis, MinIO, Node targets), over rotating targets, with a schedule,
 * its retention and a watch rule running beside them; the process's RSS, open
 * file descriptors and event-loop delay (its `/metrics`), Redis's memory and
 * the temp directory (spill files, FIFOs) are sampled as it goes, and each
 * series gets a least-squares slope per 1,000 captures after a warm-up.
 *
 * `npm run bench -- soak` runs 1,000 captures (bench/soak.ts);
 * services/serve/test/soak.test.ts runs a short form in `npm test`.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { mkdir, writeFile } from 'node:fs/promises';
import { fixturePath } from './fixtures.ts';
import { startDevServe, type RunningHeapcap } from './heapcap-command.ts';
import { heapcapS3Env, type MinioServer } from './minio.ts';
import { startNodeTarget, type NodeTarget } from './node-target.ts';
import { waitFor } from './proc.ts';
import type { RedisServer } from './redis.ts';

export interface SoakOptions {
  /** Captures requested back to back (each waits for the previous one to end). */
  captures: number;
  /** Targets the captures rotate over. */
  targets: number;
  /** Each target's retained heap (heap-holder.cjs). */
  heapMb: number;
  /** A sample after every this many captures. */
  sampleEvery: number;
  /** Fraction of the run left out of the slopes (allocator and JIT warm-up). */
  warmup?: number;
  workDir: string;
  redis: RedisServer;
  minio: MinioServer;
  bucket: string;
  /** Progress lines (the bench prints them). */
  log?: (line: string) => void;
}

/** One sample, taken between two captures. */
export interface SoakSample {
  captures: number;
  seconds: number;
  rssMb: number;
  heapUsedMb: number;
  fds: number;
  /** p99 of the event-loop delay since the previous scrape (prom-client resets its histogram per scrape). */
  eventLoopP99Ms: number;
  redisUsedMb: number;
  tmpEntries: number;
  tmpMb: number;
}

export type SoakSeries = Exclude<keyof SoakSample, 'captures' | 'seconds'>;

export interface SoakResult {
  samples: SoakSample[];
  /** Least-squares slope of each series per 1,000 captures, over the samples after the warm-up. */
  slopes: Record<SoakSeries, number>;
  /** Ad-hoc captures that did not succeed: `id: status code`. */
  failures: string[];
  succeeded: number;
  /** Captures the schedule made during the soak (its retention keeps the last 3). */
  scheduled: number;
  /** Redis bytes one finished capture's own keys take (MEMORY USAGE summed over keys named by its id). */
  recordBytes: number;
  /** The temp directory once the service was idle at the end: entries left. */
  tmpLeft: string[];
  seconds: number;
}

const SERIES: SoakSeries[] = ['rssMb', 'heapUsedMb', 'fds', 'eventLoopP99Ms', 'redisUsedMb', 'tmpEntries', 'tmpMb'];

/** Least-squares slope of y over x. */
export function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  if (n < 2) return 0;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += ((xs[i] as number) - mx) * ((ys[i] as number) - my);
    den += ((xs[i] as number) - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

function metric(text: string, name: string): number {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'm').exec(text);
  if (m === null) throw new Error(`/metrics has no ${name}`);
  return Number(m[1]);
}

async function dirUsage(dir: string): Promise<{ entries: string[]; bytes: number }> {
  const entries: string[] = [];
  let bytes = 0;
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      const p = join(d, e.name);
      entries.push(p.slice(dir.length + 1));
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) bytes += (await stat(p).catch(() => ({ size: 0 }))).size;
    }
  };
  await walk(dir);
  return { entries, bytes };
}

async function api<T>(serve: RunningHeapcap, method: string, path: string, body?: unknown, timeoutMs = 30_000): Promise<{ status: number; body: T }> {
  const res = await fetch(`${serve.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  return { status: res.status, body: (await res.json()) as T };
}

interface CaptureWire {
  capture: { id: string; status: string; error: { code: string } | null };
}

/** Runs the soak; every process it starts is stopped before it returns. */
export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  const log = o.log ?? (() => undefined);
  const tmp = join(o.workDir, 'tmp');
  await mkdir(tmp, { recursive: true });
  const targets: NodeTarget[] = await Promise.all(Array.from({ length: o.targets }, () => startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: String(o.heapMb) } })));
  let serve: RunningHeapcap | undefined;
  try {
    await writeFile(
      join(o.workDir, 'targets.yaml'),
      `targets:\n${targets.map((t, i) => `  - id: soak-${i}\n    kind: node\n    inspect: 127.0.0.1:${t.port}\n    labels: { soak: "yes" }\n`).join('')}`,
    );
    serve = await startDevServe(o.workDir, o.redis.url, {
      ...heapcapS3Env(o.minio, `s3://${o.bucket}/soak`),
      // Spill files and pipe FIFOs go under os.tmpdir(): one directory to watch.
      TMPDIR: tmp,
      HEAPCAP_SPILL_DIR: tmp,
      HEAPCAP_SCHEDULE_MIN_INTERVAL: '1s',
      HEAPCAP_RETENTION_INTERVAL: '5s',
      HEAPCAP_WATCH_INTERVAL: '1s',
      // Each target's sample stream holds retention / interval entries: 20 here, so it is flat within the soak.
      HEAPCAP_WATCH_RETENTION: '20s',
      HEAPCAP_LOG_LEVEL: 'warn',
    });
    const s = serve;
    // Beside the captures: a schedule over the first target whose retention deletes as it goes, and a watch
    // rule over every target that samples each second and never fires (its threshold is out of reach).
    const sched = await api(s, 'POST', '/v1/schedules', { id: 'soak', target: 'soak-0', every: '5s', retention: { keepLast: 3 } });
    if (sched.status !== 201) throw new Error(`schedule: ${sched.status} ${JSON.stringify(sched.body)}`);
    for (let i = 0; i < o.targets; i++) {
      const rule = await api(s, 'POST', '/v1/watch-rules', { id: `soak-${i}`, target: `soak-${i}`, when: { metric: 'heapUsedBytes', above: 64 * 1024 ** 3, forSeconds: 1 }, cooldownSeconds: 3600, maxPerDay: 1 });
      if (rule.status !== 201) throw new Error(`watch rule: ${rule.status} ${JSON.stringify(rule.body)}`);
    }

    const started = performance.now();
    const samples: SoakSample[] = [];
    const sample = async (captures: number): Promise<void> => {
      const text = await (await fetch(`${s.url}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
      const usedMemory = Number(/used_memory:(\d+)/.exec(await o.redis.cli('INFO', 'memory'))?.[1] ?? NaN);
      const usage = await dirUsage(tmp);
      samples.push({
        captures,
        seconds: (performance.now() - started) / 1000,
        rssMb: metric(text, 'process_resident_memory_bytes') / 2 ** 20,
        heapUsedMb: metric(text, 'nodejs_heap_size_used_bytes') / 2 ** 20,
        fds: metric(text, 'process_open_fds'),
        eventLoopP99Ms: metric(text, 'nodejs_eventloop_lag_p99_seconds') * 1000,
        redisUsedMb: usedMemory / 2 ** 20,
        tmpEntries: usage.entries.length,
        tmpMb: usage.bytes / 2 ** 20,
      });
    };
    await sample(0);
    const failures: string[] = [];
    let succeeded = 0;
    let lastId = '';
    for (let i = 1; i <= o.captures; i++) {
      const r = await api<CaptureWire>(s, 'POST', '/v1/captures?wait=120', { target: `soak-${i % o.targets}`, force: true, reason: 'soak' }, 150_000);
      let c = r.body.capture;
      // Longer than the wait (a machine busy with other work): follow it to its end rather than count it failed.
      if (c !== undefined && (c.status === 'queued' || c.status === 'running')) {
        const id = c.id;
        c = await waitFor(
          async () => {
            const now = (await api<CaptureWire>(s, 'GET', `/v1/captures/${id}`)).body.capture;
            return now.status === 'queued' || now.status === 'running' ? undefined : now;
          },
          { timeoutMs: 600_000, intervalMs: 500, what: `capture ${id} to end` },
        );
      }
      if (c?.status === 'succeeded') {
        succeeded++;
        lastId = c.id;
      } else failures.push(`${c?.id ?? `#${i}`}: ${c?.status ?? r.status} ${c?.error?.code ?? ''}`.trim());
      if (i % o.sampleEvery === 0 || i === o.captures) {
        await sample(i);
        const last = samples.at(-1) as SoakSample;
        log(`soak ${i}/${o.captures}: rss ${last.rssMb.toFixed(0)} MB, fds ${last.fds}, loop p99 ${last.eventLoopP99Ms.toFixed(0)} ms, redis ${last.redisUsedMb.toFixed(1)} MB, tmp ${last.tmpEntries} entries`);
      }
    }
    const seconds = (performance.now() - started) / 1000;
    // Idle: pause the schedule and wait for what is running to end, then nothing may be left in the temp dir.
    await api(s, 'POST', '/v1/schedules/soak/pause', {});
    const tmpLeft = await waitFor(
      async () => {
        const running = await api<{ items: unknown[] }>(s, 'GET', '/v1/captures?status=running');
        const queued = await api<{ items: unknown[] }>(s, 'GET', '/v1/captures?status=queued');
        if (running.body.items.length + queued.body.items.length > 0) return undefined;
        return (await dirUsage(tmp)).entries;
      },
      { timeoutMs: 120_000, intervalMs: 250, what: 'the service idle after the soak' },
    );
    const scheduled = metric(await (await fetch(`${s.url}/metrics`)).text(), 'heapcap_schedule_runs_total\\{outcome="created"\\}');
    const recordBytes = await keyBytes(o.redis, lastId);
    const from = Math.floor(o.captures * (o.warmup ?? 0.1));
    const kept = samples.filter((x) => x.captures >= from);
    const slopes = Object.fromEntries(SERIES.map((k) => [k, slope(kept.map((x) => x.captures), kept.map((x) => x[k])) * 1000])) as Record<SoakSeries, number>;
    return { samples, slopes, failures, succeeded, scheduled, recordBytes, tmpLeft, seconds };
  } finally {
    await serve?.stop('SIGTERM');
    await Promise.all(targets.map((t) => t.kill('SIGKILL')));
  }
}

/** Redis bytes of every key whose name holds `id` (a capture's record and whatever else is keyed by it). */
async function keyBytes(redis: RedisServer, id: string): Promise<number> {
  if (id === '') return 0;
  const keys = (await redis.cli('--scan', '--pattern', `*${id}*`)).split('\n').filter((k) => k !== '');
  let bytes = 0;
  for (const k of keys) bytes += Number(await redis.cli('MEMORY', 'USAGE', k)) || 0;
  return bytes;
}
