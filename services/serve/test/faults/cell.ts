/**
 * One cell of the fault matrix (issue 25): against `bin/heapcap serve` with a
 * real Redis (AOF), MinIO and a Node target, request a capture, inject one
 * fault when the capture reaches one phase, clear it, and report what was
 * left: the record's final status, code and phase, the objects and multipart
 * uploads under the cell's own storage prefix, whether the target lock is
 * still held, and whether serve is healthy afterwards (ready, and a capture of
 * a second, untouched target succeeds).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { mkdir, writeFile } from 'node:fs/promises';
import { ListMultipartUploadsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { fixturePath, heapcapS3Env, mountTmpfs, startCdpProxy, startDevServe, startHttpHoldProxy, startNodeTarget, waitFor, type MinioServer, type NodeTarget, type PersistentRedis, type Tmpfs } from '@heapcap/testkit';

const run = promisify(execFile);

export const FAULTS = ['redis-down', 'redis-paused', 'redis-emptied', 'minio-down', 'minio-paused', 'target-killed', 'target-frozen', 'serve-killed', 'spill-full'] as const;
export const PHASES = ['queued', 'connect', 'warm', 'generate', 'serialize', 'upload', 'summary'] as const;
export type Fault = (typeof FAULTS)[number];
export type CellPhase = (typeof PHASES)[number];

/** How long a fault lasts before it is cleared (a killed target stays dead). */
export const HOLD_MS = 4_000;
/** The faulted target's heap: its snapshot takes seconds, so each phase is caught by polling. */
export const HEAP_MB = 80;
/**
 * `spill-full` cells: the serve spills to a tmpfs of this size and holds at most this many MiB of snapshot in
 * memory. A capture spills at most its snapshot (the 80 MB target's is 137 MB of JSON, and one cell spilled
 * 136 MB of it), so the tmpfs fills only when the fault fills it.
 */
export const SPILL_MB = 256;
export const SPILL_CEILING_MB = 1;

/** What the matrix expects of a cell: the record's final status, and for a failure its code and phase. */
export interface Expected {
  status: 'succeeded' | 'failed';
  code?: string;
  phase?: string;
}

/** What a cell left behind. */
export interface CellResult {
  fault: Fault;
  phase: CellPhase;
  status: string;
  code: string | null;
  /** The error's message (null when it succeeded). */
  message: string | null;
  failedPhase: string | null;
  attempts: number;
  objects: string[];
  multipartUploads: number;
  lockHeld: boolean;
  healthyAfter: boolean;
  /** `spill-full`: the names left in the spill directory at the end (null for the other faults). */
  spillFiles: string[] | null;
  ms: number;
}

/** What every cell shares: Redis with persistence, MinIO with the bucket, a healthy second target. */
export interface Rig {
  redis: PersistentRedis;
  minio: MinioServer;
  bucket: string;
  spare: NodeTarget;
  dir: string;
}

/** One Redis command through redis-cli (works the same whatever heapcap's clients are doing). */
export async function redisCli(redis: PersistentRedis, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-p', String(redis.port), ...args], { timeout: 10_000 });
  return stdout.trim();
}

interface Wire {
  status: string;
  phase: string | null;
  attempts: number;
  error: { code: string; message: string; phase?: string } | null;
}

async function record(url: string, id: string): Promise<Wire | undefined> {
  const res = await fetch(`${url}/v1/captures/${id}`, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
  if (res?.status !== 200) return undefined;
  return ((await res.json()) as { capture: Wire }).capture;
}

/** What a fault may act on besides the rig: the cell's target, and its serve (stopped and started again). */
interface CellParts {
  target: NodeTarget;
  /** `spill-full`: the serve's spill directory. */
  spill: Tmpfs | undefined;
  killServe(): Promise<void>;
  startServe(): Promise<void>;
}

/** Inject `fault`; resolves with the function that clears it. */
async function inject(rig: Rig, fault: Fault, parts: CellParts): Promise<() => Promise<void>> {
  const { target } = parts;
  switch (fault) {
    case 'redis-down':
      await rig.redis.stop();
      return () => rig.redis.start();
    case 'redis-emptied':
      // Killed, and back without its volume: every key heapcap had is gone.
      await rig.redis.kill();
      await rig.redis.wipe();
      return () => rig.redis.start();
    case 'serve-killed':
      // The process holding the capture (API and worker) dies; a new one starts on the same Redis and storage.
      await parts.killServe();
      return () => parts.startServe();
    case 'redis-paused':
      rig.redis.pause();
      return async () => rig.redis.resume();
    case 'minio-down':
      await rig.minio.kill('SIGKILL');
      return () => rig.minio.restart();
    case 'minio-paused':
      rig.minio.pause();
      return async () => rig.minio.resume();
    case 'target-killed':
      await target.kill('SIGKILL');
      return async () => undefined;
    case 'target-frozen':
      process.kill(target.pid, 'SIGSTOP');
      return async () => void process.kill(target.pid, 'SIGCONT');
    case 'spill-full': {
      // Filler files take every free byte of the spill's tmpfs: the next spill write gets ENOSPC.
      const spill = parts.spill;
      if (spill === undefined) throw new Error('spill-full needs the cell\'s tmpfs');
      await spill.fill();
      return () => spill.clear();
    }
  }
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'expired']);

/** The record's live phase that is the cell's phase (`upload`: the engine's `sink`, the store finishing the upload). */
const RECORD_PHASE: Record<Exclude<CellPhase, 'queued'>, string> = { connect: 'connect', warm: 'warm', generate: 'generate', serialize: 'serialize', upload: 'sink', summary: 'summary' };

/**
 * A short phase held open until the fault is in place, by slowing what the capture waits on, never by failing
 * it: the target's inspector behind a CDP proxy that holds the WebSocket handshake (`connect`) or the warm
 * step's `Debugger.enable` (`warm`, forced with `warm: always`: the V8 of the Node targets here caches line ends
 * itself, so `auto` skips it); MinIO behind an HTTP proxy that holds the request ending the artifact's upload
 * (`upload`) or the summary's PUT (`summary`). The hold is let go right after the fault is injected, so the
 * held call meets the fault. `generate` and `serialize` last long enough on their own (80 MB heap).
 */
type Hold = { kind: 'cdp'; what: string; matching?: string } | { kind: 's3'; when: (method: string, url: string) => boolean };
const HOLDS: Partial<Record<CellPhase, Hold>> = {
  connect: { kind: 'cdp', what: 'connect' },
  warm: { kind: 'cdp', what: 'Debugger.enable' },
  // CompleteMultipartUpload, or the one PUT of an artifact small enough for a single part.
  upload: { kind: 's3', when: (method, url) => (method === 'POST' && url.includes('uploadId=')) || (method === 'PUT' && /\.heapsnapshot(\.gz)?(\?|$)/.test(url) && !url.includes('partNumber=')) },
  summary: { kind: 's3', when: (method, url) => method === 'PUT' && /\.summary\.json(\?|$)/.test(url) },
};

/**
 * `spill-full` holds its phase for the whole fault and lets go only once the disk has room again: a full disk
 * matters only to what writes the spill, and a capture let go at once would carry the full disk on into a later
 * phase (`connect` → `serialize` is `warm` plus `generate`, a few seconds of an 80 MB heap), so its outcome would
 * turn on how long those took. Two phases get their own hold:
 * - `generate`, which is not held otherwise, holds the request that starts the snapshot: the `Runtime.evaluate`
 *   calling `v8.writeHeapSnapshot` into the pipe (these local Node targets take the pipe; the capturer waits
 *   in `generate` as it does while V8 walks the heap);
 * - `serialize` holds the artifact's CreateMultipartUpload (or its one PUT): the store takes no byte, so past the
 *   first part (8 MiB of gzip) the upload stops reading and every chunk V8 sends from then on must spill. The
 *   fault goes in at the first byte spilled, not when that request waits: gzip is slower than V8 here, so the
 *   spill starts with the first chunks, and by the time the first part was full V8 had sent the whole
 *   snapshot (130 MB were in the spill). Without the hold a store that keeps up would leave nothing to spill.
 */
const SPILL_HOLDS: Partial<Record<CellPhase, Hold>> = {
  generate: { kind: 'cdp', what: 'Runtime.evaluate', matching: 'writeHeapSnapshot' },
  serialize: { kind: 's3', when: (method, url) => (method === 'POST' && /\?uploads(=|&|$)/.test(url)) || (method === 'PUT' && /\.heapsnapshot(\.gz)?(\?|$)/.test(url) && !url.includes('partNumber=')) },
};

/** Run one cell; `n` names its target, storage prefix and work directory. */
export async function runCell(rig: Rig, fault: Fault, phase: CellPhase, n: number): Promise<CellResult> {
  const started = performance.now();
  const id = `app${n}`;
  const prefix = `cell${n}`;
  const work = join(rig.dir, prefix);
  await mkdir(work, { recursive: true });
  const target = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: String(HEAP_MB) } });
  const stops: (() => Promise<unknown>)[] = [() => target.kill('SIGKILL')];
  try {
    const spillFull = fault === 'spill-full';
    const hold = (spillFull ? SPILL_HOLDS[phase] : undefined) ?? HOLDS[phase];
    const cdp = hold?.kind === 'cdp' ? await startCdpProxy(target.wsUrl ?? '') : undefined;
    const s3 = hold?.kind === 's3' ? await startHttpHoldProxy(rig.minio.endpoint) : undefined;
    if (cdp !== undefined) stops.push(() => cdp.close());
    if (s3 !== undefined) stops.push(() => s3.close());
    // Last of the stops: unmounted once serve is gone.
    const spill = spillFull ? await mountTmpfs(join(work, 'spill'), SPILL_MB) : undefined;
    if (spill !== undefined) stops.push(() => spill.unmount());
    const address = cdp === undefined ? `inspect: 127.0.0.1:${target.port}` : `ws: ${cdp.url}`;
    await writeFile(join(work, 'targets.yaml'), `targets:\n  - id: ${id}\n    kind: node\n    ${address}\n  - id: spare\n    kind: node\n    inspect: 127.0.0.1:${rig.spare.port}\n`);
    const env = { ...heapcapS3Env(rig.minio, `s3://${rig.bucket}/${prefix}`), ...(s3 === undefined ? {} : { HEAPCAP_S3_ENDPOINT: s3.endpoint }), ...(spill === undefined ? {} : { HEAPCAP_SPILL_DIR: spill.path, HEAPCAP_MEMORY_CEILING_MB: String(SPILL_CEILING_MB) }), HEAPCAP_LOG_LEVEL: 'info' };
    if (hold?.kind === 'cdp') cdp?.hold(hold.what, hold.matching);
    if (hold?.kind === 's3') s3?.hold(hold.when);
    const held = (): number => cdp?.held() ?? s3?.held() ?? 1;
    let serve = await startDevServe(work, rig.redis.url, env);
    stops.unshift(() => serve.stop('SIGTERM'));
    const lockKey = `heapcap:hc:lock:${id}`;
    // Queued: another capture holds the target, so this one waits in the queue through the fault.
    if (phase === 'queued') await redisCli(rig.redis, 'SET', lockKey, 'fault-matrix', 'PX', '120000');
    const res = await fetch(`${serve.url}/v1/captures`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ target: id, ...(phase === 'warm' ? { options: { warm: 'always' } } : {}) }) });
    if (res.status !== 202) throw new Error(`capture request: ${res.status} ${await res.text()}`);
    const captureId = ((await res.json()) as { capture: { id: string } }).capture.id;
    if (spill !== undefined && phase === 'serialize') {
      // In-process and every 5 ms: serialize lasts 2-3 s, and an HTTP poll of the record can lag behind it.
      await waitFor(async () => (await spill.used()) > 0, { timeoutMs: 60_000, intervalMs: 5, what: `capture ${captureId} spilling` });
    } else if (phase !== 'queued') {
      const live = RECORD_PHASE[phase];
      await waitFor(async () => held() > 0 && (await record(serve.url, captureId))?.phase === live, { timeoutMs: 60_000, intervalMs: 10, what: `capture ${captureId} in ${live}` });
    }
    const clear = await inject(rig, fault, {
      target,
      spill,
      killServe: async () => void (await serve.stop('SIGKILL')),
      startServe: async () => {
        serve = await startDevServe(work, rig.redis.url, env);
      },
    });
    // spill-full lets go only once the disk has room again (SPILL_HOLDS says why).
    if (!spillFull) {
      cdp?.release();
      s3?.release();
    }
    await new Promise((resolve) => setTimeout(resolve, HOLD_MS));
    await clear();
    cdp?.release();
    s3?.release();
    if (phase === 'queued') await waitFor(async () => (await redisCli(rig.redis, 'DEL', lockKey)) !== '', { timeoutMs: 30_000, what: 'the test lock released' });
    const final = await waitFor(
      async () => {
        const r = await record(serve.url, captureId);
        return r !== undefined && TERMINAL.has(r.status) ? r : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 250, what: `capture ${captureId} terminal` },
    );
    const objects = await waitFor(() => listAll(rig, prefix), { timeoutMs: 10_000, what: 'the object listing' });
    const uploads = await rig.minio.client.send(new ListMultipartUploadsCommand({ Bucket: rig.bucket, Prefix: `${prefix}/` }));
    // The worker writes the outcome, then releases the lock: on a loaded machine the record can be read in
    // between (run L). Held means still held 10 s later, well before the lease (30 s, renewed every 10 s) expires.
    const lockHeld = await waitFor(async () => ((await redisCli(rig.redis, 'EXISTS', lockKey)) === '0' ? true : undefined), { timeoutMs: 10_000, intervalMs: 100, what: 'the target lock released' }).then(
      () => false,
      () => true,
    );
    const healthyAfter = await healthy(serve.url);
    // After the next capture too: it spilled to the same directory.
    const spillFiles = spill === undefined ? null : await spill.files();
    // HEAPCAP_FAULTS_LOGS=DIR keeps each cell's serve output (stdout: JSON log lines) for reading a surprise.
    const logs = process.env['HEAPCAP_FAULTS_LOGS'];
    if (logs !== undefined) await writeFile(join(logs, `${fault}-${phase}.log`), `${serve.stdout.text()}\n${serve.stderr.text()}`);
    return {
      fault,
      phase,
      status: final.status,
      code: final.error?.code ?? null,
      message: final.error?.message ?? null,
      failedPhase: final.status === 'succeeded' ? null : (final.error?.phase ?? final.phase),
      attempts: final.attempts,
      objects,
      multipartUploads: uploads.Uploads?.length ?? 0,
      lockHeld,
      healthyAfter,
      spillFiles,
      ms: Math.round(performance.now() - started),
    };
  } finally {
    for (const stop of stops) await stop().catch(() => undefined);
  }
}

async function listAll(rig: Rig, prefix: string): Promise<string[]> {
  const out = await rig.minio.client.send(new ListObjectsV2Command({ Bucket: rig.bucket, Prefix: `${prefix}/` }));
  return (out.Contents ?? []).map((o) => (o.Key ?? '').slice(prefix.length + 1)).sort();
}

/** Ready again, and a capture of the untouched target succeeds. */
async function healthy(url: string): Promise<boolean> {
  try {
    await waitFor(async () => (await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined))?.status === 200, { timeoutMs: 60_000, intervalMs: 250, what: '/readyz 200' });
    const res = await fetch(`${url}/v1/captures?wait=120`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ target: 'spare', force: true }), signal: AbortSignal.timeout(150_000) });
    return res.ok && ((await res.json()) as { capture: { status: string } }).capture.status === 'succeeded';
  } catch {
    return false;
  }
}
