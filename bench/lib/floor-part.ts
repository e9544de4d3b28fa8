/**
 * One part of a capture's control-plane floor (bench/capture-floor.ts), paced
 * at a rate in its own process so its CPU (process.cpuUsage: every thread) is
 * its own:
 *
 *   node --import tsx bench/lib/floor-part.ts job   RATE N REDIS_URL
 *   node --import tsx bench/lib/floor-part.ts cdp   RATE N STUB_PORT
 *   node --import tsx bench/lib/floor-part.ts ws    RATE N STUB_PORT
 *   node --import tsx bench/lib/floor-part.ts files RATE N DIR
 *   node --import tsx bench/lib/floor-part.ts all   RATE N REDIS_URL STUB_PORT DIR
 *
 * RATE is operations per second (0: as fast as they go, in batches of 50),
 * started on an absolute clock (t0 + i / RATE) with at most 16 in flight (a
 * worker's concurrency in bench/scale.ts). Prints one JSON line:
 * `{"part","rate","n","cpuMs","redisCpuMs","done","failed","firstError","wallS"}`:
 * the operations that ended well and that failed are counted, not assumed.
 *
 * - job: a bare BullMQ job (add, move to active, a no-op processor, move to
 *   completed; removeOnComplete 1,000 like heapcap's capture jobs) with the
 *   producer and the worker in this process; Redis CPU from INFO.
 * - cdp: the engine's capture (captureHeapSnapshot, CDP transport, its defaults)
 *   of one stub target, its stream drained and dropped.
 * - ws: the protocol's least (bench/lib/floor-client.ts's session): open the
 *   target's WebSocket, HeapProfiler.enable and takeHeapSnapshot, drop the
 *   chunks unread, close. No discovery, facts, headroom, parsing or digest.
 * - files: the three objects the file sink stores per capture (a 7 KB gzipped
 *   snapshot, a 1 KB summary, a 1 KB manifest), each written to a temp file,
 *   fsynced, closed and renamed, then one fsync of their directory: the least a
 *   durable rename needs (the sink fsyncs the directory after each file). The
 *   1,000 target directories exist beforehand, as they do after a target's
 *   first capture of the day.
 * - all: the parts in one process, as a minimal capture worker would run
 *   them: a BullMQ job whose processor takes the stub's snapshot with the `ws`
 *   session, then writes the three files. One process shares its wake-ups
 *   among the parts (one turn of the event loop reads a Redis reply and a CDP
 *   frame), so this is the floor, and less than the parts' sum.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { captureHeapSnapshot } from '@heapcap/capture';
import { WebSocket } from './frames.ts';

const [part, rateArg, nArg, where, stubPort, dirArg] = process.argv.slice(2);
const rate = Number(rateArg);
const n = Number(nArg);
if (!['job', 'cdp', 'ws', 'files', 'all'].includes(part ?? '') || !(rate >= 0) || !(n > 0) || where === undefined || (part === 'all' && (stubPort === undefined || dirArg === undefined))) {
  throw new Error('usage: floor-part.ts job RATE N REDIS_URL | cdp|ws RATE N STUB_PORT | files RATE N DIR | all RATE N REDIS_URL STUB_PORT DIR');
}
const IN_FLIGHT = 16;
const TARGETS = 1_000;

/** Operations that ended well, that failed, and the first failure's message. */
const outcome = { done: 0, failed: 0, firstError: '' };

/** Starts `op(i)` for i < n at `rate` per second (0: back to back), at most IN_FLIGHT at once; resolves when all have ended (counted in `outcome`). */
async function paced(op: (i: number) => Promise<void>): Promise<void> {
  const t0 = performance.now();
  let inFlight = 0;
  const slots: (() => void)[] = [];
  const all: Promise<void>[] = [];
  for (let i = 0; i < n; i += 1) {
    if (rate > 0) {
      const due = t0 + (i * 1000) / rate - performance.now();
      if (due > 0) await new Promise((resolve) => setTimeout(resolve, due));
    }
    while (inFlight >= IN_FLIGHT) await new Promise<void>((resolve) => slots.push(resolve));
    inFlight += 1;
    all.push(
      op(i)
        .then(
          () => {
            outcome.done += 1;
          },
          (err: unknown) => {
            outcome.failed += 1;
            outcome.firstError ||= err instanceof Error ? err.message : String(err);
          },
        )
        .finally(() => {
          inFlight -= 1;
          slots.shift()?.();
        }),
    );
  }
  await Promise.all(all);
}

async function redisCpuMs(redis: Redis): Promise<number> {
  const text = await redis.info('cpu');
  const field = (name: string): number => Number(new RegExp(`${name}:([\\d.]+)`).exec(text)?.[1] ?? NaN);
  return (field('used_cpu_sys') + field('used_cpu_user')) * 1000;
}

async function jobs(url: string, processor: (i: number) => Promise<void> = async () => {}): Promise<{ cpuMs: number; redisCpuMs: number }> {
  const connection = { url, maxRetriesPerRequest: null } as const;
  const admin = new Redis(url);
  const queue = new Queue('floor', { connection });
  // Job i's end: completed resolves, failed rejects (a processor that throws must not leave the bench waiting).
  const waiters = new Map<number, { resolve(): void; reject(err: Error): void }>();
  const ended = (i: number): Promise<void> => new Promise<void>((resolve, reject) => waiters.set(i, { resolve, reject }));
  const worker = new Worker<{ i: number }>('floor', (job) => processor(job.data.i), { connection, concurrency: IN_FLIGHT });
  worker.on('completed', (job) => {
    waiters.get(job.data.i)?.resolve();
    waiters.delete(job.data.i);
  });
  worker.on('failed', (job, err) => {
    if (job !== undefined) waiters.get(job.data.i)?.reject(err);
  });
  await worker.waitUntilReady();
  const add = (i: number): Promise<void> => {
    const done = ended(i);
    return queue.add('j', { i }, { removeOnComplete: 1_000 }).then(() => done);
  };
  // Warm-up: the scripts loaded, the connections open.
  for (let i = -20; i < 0; i += 1) await add(i);
  const r0 = await redisCpuMs(admin);
  const c0 = process.cpuUsage();
  if (rate > 0) await paced(add);
  else {
    for (let i = 0; i < n; i += 50) {
      const batch = Array.from({ length: Math.min(50, n - i) }, (_, k) => i + k);
      const done = batch.map(ended);
      await queue.addBulk(batch.map((j) => ({ name: 'j', data: { i: j }, opts: { removeOnComplete: 1_000 } })));
      for (const settled of await Promise.allSettled(done)) {
        if (settled.status === 'fulfilled') outcome.done += 1;
        else {
          outcome.failed += 1;
          outcome.firstError ||= String(settled.reason);
        }
      }
    }
  }
  const cpu = process.cpuUsage(c0);
  const redisCpu = (await redisCpuMs(admin)) - r0;
  await worker.close();
  await queue.close();
  admin.disconnect();
  return { cpuMs: (cpu.user + cpu.system) / 1000, redisCpuMs: redisCpu };
}

function captureOp(port: string): (i: number) => Promise<void> {
  return async (i) => {
    await captureHeapSnapshot({ endpoint: { kind: 'node', ws: `ws://127.0.0.1:${port}/t/t${i % TARGETS}` }, transport: 'cdp' }, async (stream) => {
      for await (const chunk of stream) void chunk;
    });
  };
}

/** The least a snapshot over CDP takes: enable, take, the chunks dropped unread (floor-client.ts). */
function protocolOp(port: string): (i: number) => Promise<void> {
  return async (i) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/t/t${i % TARGETS}`, { perMessageDeflate: false });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    // Responses are the only messages that start with {"id":; the snapshot's is id 2.
    const taken = new Promise<void>((resolve, reject) => {
      ws.on('message', (data) => data.toString('latin1', 0, 7) === '{"id":2' && resolve());
      ws.once('error', reject);
    });
    ws.send(JSON.stringify({ id: 1, method: 'HeapProfiler.enable', params: {} }));
    ws.send(JSON.stringify({ id: 2, method: 'HeapProfiler.takeHeapSnapshot', params: { reportProgress: false } }));
    await taken;
    ws.close();
  };
}

/** CPU of `paced(op)`, after `warm` calls that are not counted (connections, compiled code). */
async function cpuOf(op: (i: number) => Promise<void>, warm: number): Promise<{ cpuMs: number }> {
  for (let i = 0; i < warm; i += 1) await op(i);
  const c0 = process.cpuUsage();
  await paced(op);
  const cpu = process.cpuUsage(c0);
  return { cpuMs: (cpu.user + cpu.system) / 1000 };
}

/** Creates the 1,000 target directories; returns the op that writes capture i's three files. */
async function filesOp(dir: string): Promise<(i: number) => Promise<void>> {
  const dirOf = (i: number): string => join(dir, `t${i % TARGETS}`, '2026', '11', '27');
  for (let t = 0; t < TARGETS; t += 1) await mkdir(dirOf(t), { recursive: true });
  const bodies = [randomBytes(7_000), randomBytes(1_000), randomBytes(1_000)];
  const names = ['heapsnapshot.gz', 'summary.json', 'manifest.json'];
  return async (i) => {
    const at = dirOf(i);
    for (const [k, body] of bodies.entries()) {
      const final = join(at, `c${i}.${names[k] ?? k}`);
      const tmp = `${final}.${randomBytes(6).toString('hex')}.tmp`;
      const handle = await open(tmp, 'wx', 0o600);
      try {
        await handle.writeFile(body);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, final);
    }
    const d = await open(at, 'r');
    try {
      await d.sync();
    } finally {
      await d.close();
    }
  };
}

async function all(url: string, port: string, dir: string): Promise<{ cpuMs: number; redisCpuMs: number }> {
  const capture = protocolOp(port);
  const write = await filesOp(dir);
  return jobs(url, async (i) => {
    await capture(i < 0 ? -i : i);
    await write(i < 0 ? TARGETS - 1 + i : i);
  });
}

const w0 = performance.now();
const measured =
  part === 'job'
    ? await jobs(where)
    : part === 'cdp'
      ? await cpuOf(captureOp(where), 20)
      : part === 'ws'
        ? await cpuOf(protocolOp(where), 20)
        : part === 'files'
          ? await cpuOf(await filesOp(where), 0)
          : await all(where, stubPort ?? '', dirArg ?? '');
process.stdout.write(`${JSON.stringify({ part, rate, n, redisCpuMs: 0, ...measured, ...outcome, wallS: (performance.now() - w0) / 1000 })}\n`);
process.exit(0);
