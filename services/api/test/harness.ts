/**
 * Test harness: the API built on a real Redis (one server per test file, a
 * fresh key prefix per harness), real file storage in a temp dir, real tokens
 * and, on request, a real CaptureWorker from services/worker.
 */
import assert from 'node:assert/strict';
import { createReadStream } from 'node:fs';
import { pino, type Logger } from 'pino';
import { parseConfig } from '@heapcap/config';
import type { CaptureRecord, HeapcapQueue, Target } from '@heapcap/state';
import type { ArtifactStore } from '@heapcap/storage';
import { createTestWorld, jsonLogSink, sampleManifest, type TestWorld, type TmpDir } from '@heapcap/testkit';
import { CaptureWorker, ScheduleWorker, type ScheduleWorkerTuning, type WorkerTuning } from '@heapcap/worker';
import { buildApp, hashToken, parseTokens, type ApiInstance, type HttpSettings, type Scope } from '../src/index.ts';

/** Token values by name; each name's scopes are in TOKEN_SCOPES. */
export const TOKENS = {
  admin: 'tok-admin-4f1c9a',
  runbook: 'tok-runbook-77d2e0',
  reader: 'tok-reader-a93b51',
  writer: 'tok-writer-0c6e1d',
} as const;

const TOKEN_SCOPES: Record<keyof typeof TOKENS, Scope[]> = {
  admin: ['captures:read', 'captures:write', 'artifacts:read', 'targets:admin'],
  runbook: ['captures:read', 'captures:write', 'artifacts:read'],
  reader: ['captures:read'],
  writer: ['captures:write'],
};

/** `Authorization` header for a token name. */
export function auth(name: keyof typeof TOKENS): { authorization: string } {
  return { authorization: `Bearer ${TOKENS[name]}` };
}

/** The tokens file text for TOKENS. */
export function tokensFileText(): string {
  const lines = ['tokens:'];
  for (const [name, token] of Object.entries(TOKENS)) {
    lines.push(`  - name: ${name}`, `    sha256: "${hashToken(token)}"`, `    scopes: [${TOKEN_SCOPES[name as keyof typeof TOKENS].join(', ')}]`);
  }
  return `${lines.join('\n')}\n`;
}

/** Every log line the API wrote, as text (to check redaction and audit lines). */
export class LogCapture {
  readonly #sink = jsonLogSink();
  readonly logger: Logger = pino({ level: 'info' }, this.#sink.stream);

  /** Raw lines, in order. */
  get lines(): string[] {
    return this.#sink.text();
  }

  /** Parsed lines that carry an `audit` entry. */
  audits(): { audit: { action: string; who: string; from?: string; captureId?: string } }[] {
    return this.#sink.lines().filter((o) => 'audit' in o) as never;
  }
}

export interface HarnessOptions {
  redisUrl: string;
  http?: Partial<HttpSettings>;
  /** Start a real worker with this tuning (concurrency required). */
  worker?: Partial<WorkerTuning> & { concurrency: number };
  /** The real worker's placements (default `*`) and id. */
  workerPlacements?: string[];
  workerId?: string;
  targets?: Target[];
  /** Auth mode; default tokens (TOKENS). */
  dev?: boolean;
  /** Artifact storage; default the world's file store in a temp dir. */
  sink?: ArtifactStore;
  /** More HEAPCAP_* settings for the API's (and the schedule worker's) configuration. */
  env?: Record<string, string>;
  /** The worker's analysis jobs (default: 2e9 bytes, one at a time). */
  analysis?: { maxBytes: number; concurrency: number };
  /** Start a real schedule worker (schedules and the retention janitor) with this tuning. */
  schedules?: Partial<ScheduleWorkerTuning>;
}

/** One API (and optionally a worker) on testkit's world: its own Redis key prefix and storage dir. */
export interface Harness {
  app: ApiInstance;
  queue: HeapcapQueue;
  sink: ArtifactStore;
  storage: TmpDir;
  logs: LogCapture;
  worker: CaptureWorker | undefined;
  scheduler: ScheduleWorker | undefined;
  world: TestWorld;
  /** Closes app, worker, queue, storage dir; idempotent. */
  close(): Promise<void>;
}

/** Builds a harness; the caller closes it in `after`/`finally`. */
export async function startHarness(opts: HarnessOptions): Promise<Harness> {
  const world = await createTestWorld(opts.redisUrl, { queue: { redisTimeoutMs: 2_000 }, storePrefix: 'heapcap-api-test', targets: opts.targets });
  const { queue } = world;
  const sink = opts.sink ?? world.store;
  const logs = new LogCapture();
  let app: ApiInstance | undefined;
  let worker: CaptureWorker | undefined;
  let scheduler: ScheduleWorker | undefined;
  world.onCleanup(async () => {
    await app?.close().catch(() => undefined);
    await scheduler?.close().catch(() => undefined);
    await worker?.close(10_000).catch(() => undefined);
  });
  const config = parseConfig({ HEAPCAP_LOG_LEVEL: 'info', HEAPCAP_REDIS_URL: opts.redisUrl, ...opts.env });
  try {
    app = await buildApp({
      config,
      queue,
      sink,
      auth: opts.dev === true ? { kind: 'dev' } : { kind: 'tokens', tokens: parseTokens(tokensFileText()) },
      logger: logs.logger,
      http: opts.http,
    });
    await app.ready();
    if (opts.worker !== undefined) {
      worker = new CaptureWorker({ queue, sink, log: logs.logger.child({ component: 'worker' }), tuning: opts.worker, analysis: opts.analysis, placements: opts.workerPlacements, id: opts.workerId });
      await worker.start();
    }
    if (opts.schedules !== undefined) {
      scheduler = new ScheduleWorker({ queue, store: sink, log: logs.logger.child({ component: 'schedules' }), settings: config.schedules, tuning: opts.schedules });
      await scheduler.start();
    }
  } catch (err) {
    await world.cleanup();
    throw err;
  }
  return { app, queue, sink, storage: world.storeDir, logs, worker, scheduler, world, close: () => world.cleanup() };
}
/** Jobs and records in the queue (for "nothing was enqueued" assertions). */
export async function queueState(queue: HeapcapQueue): Promise<string> {
  const d = await queue.depth();
  const audit = await queue.audit.recent(1000);
  return JSON.stringify({ jobs: d.jobs, records: d.records, audit: audit.length });
}

/** A node target entry pointing at an inspector port. */
export function nodeTarget(id: string, port: number): Target {
  return { id, kind: 'node', inspect: `127.0.0.1:${port}`, labels: { service: 'test' } };
}

/**
 * A succeeded capture of `targetId` whose artifact is the snapshot file at
 * `path`, made the way a worker makes it (attempts.start → sink.put →
 * attempts.succeed), for the artifact tests.
 */
export async function storeSucceededCapture(h: Harness, sink: ArtifactStore, targetId: string, path: string): Promise<CaptureRecord> {
  const { record: queued } = await h.queue.requestCapture({ targetId, trigger: { kind: 'rest', who: 'runbook' } });
  const started = await h.queue.attempts.start(queued.id, targetId);
  assert.ok(started.ok);
  const ref = { captureId: queued.id, targetId, startedAt: new Date(), gzip: true };
  const stored = await sink.put(ref, createReadStream(path));
  const { key: manifestKey } = await sink.putManifest(ref, sampleManifest(ref, stored));
  const { key, location, bytesUncompressed, bytesStored, sha256, gzip } = stored;
  assert.ok((await h.queue.attempts.succeed(queued.id, targetId, started.attempts, { total: 1 }, { key, manifestKey, location, bytesUncompressed, bytesStored, sha256, gzip })).ok);
  const got = await h.queue.getCapture(queued.id);
  assert.ok(got !== null);
  return got;
}
