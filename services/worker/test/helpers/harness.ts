/**
 * One test's world: a fresh key prefix on a real Redis, a file sink in a temp
 * directory, Node targets behind CDP proxies, and workers that are all closed
 * in cleanup().
 */
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { pino, type Logger } from 'pino';
import { fixturePath, startNodeTarget, tmpDir, type NodeTarget, type TmpDir } from '@heapcap/testkit';
import { createQueue, type HeapcapQueue, type QueueOptions } from '@heapcap/queue';
import { createFileSink, type ArtifactSink } from '@heapcap/storage';
import { CaptureWorker, type WorkerTuning } from '../../src/index.ts';
import { startCdpProxy, type CdpProxy } from './cdp-proxy.ts';

/** Short timings so crash recovery takes seconds, not a minute. */
export const FAST_TUNING: Partial<WorkerTuning> = {
  lockDurationMs: 2_000,
  stalledIntervalMs: 1_000,
  targetLeaseMs: 3_000,
  lockRetryMs: 200,
  settleTimeoutMs: 60_000,
  shutdownTimeoutMs: 5_000,
};

export interface TestTarget {
  id: string;
  node: NodeTarget;
  proxy: CdpProxy;
}

export interface Harness {
  prefix: string;
  redisUrl: string;
  /** The api-side queue (its own connections, like a separate process). */
  queue: HeapcapQueue;
  store: TmpDir;
  sink: ArtifactSink;
  log: Logger;
  /** Start an in-process worker on its own queue connections. */
  startWorker(tuning?: Partial<WorkerTuning>): Promise<CaptureWorker>;
  /** Start a heap-holder target (HEAP_MB) behind a proxy and register it as `id`. */
  addTarget(id: string, heapMb: number): Promise<TestTarget>;
  /** Files under the store, relative, sorted (includes dot-files such as temp files). */
  storedFiles(): Promise<string[]>;
  cleanup(): Promise<void>;
}

/** A new harness on `redisUrl`. */
export async function createHarness(redisUrl: string, queueOptions: Partial<QueueOptions> = {}): Promise<Harness> {
  const prefix = `w${randomBytes(4).toString('hex')}`;
  const options: QueueOptions = { redisUrl, prefix, backoffMs: 200, ...queueOptions };
  const queue = createQueue(options);
  const store = await tmpDir('heapcap-store');
  const sink = createFileSink({ dir: store.path });
  const log = pino({ level: process.env['HEAPCAP_TEST_LOG'] ?? 'silent' });
  const workers: CaptureWorker[] = [];
  const workerQueues: HeapcapQueue[] = [];
  const targets: TestTarget[] = [];
  return {
    prefix,
    redisUrl,
    queue,
    store,
    sink,
    log,
    async startWorker(tuning = {}) {
      const q = createQueue(options);
      workerQueues.push(q);
      const w = new CaptureWorker({ queue: q, sink, log, tuning: { concurrency: 2, ...FAST_TUNING, ...tuning } });
      workers.push(w);
      await w.start();
      return w;
    },
    async addTarget(id, heapMb) {
      const node = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: String(heapMb) } });
      const proxy = await startCdpProxy(node.wsUrl ?? '');
      const t = { id, node, proxy };
      targets.push(t);
      await queue.targets.put({ id, kind: 'node', ws: proxy.url, labels: { service: 'test' } });
      return t;
    },
    async storedFiles() {
      const out: string[] = [];
      const walk = async (dir: string): Promise<void> => {
        for (const e of await readdir(dir, { withFileTypes: true })) {
          const p = join(dir, e.name);
          if (e.isDirectory()) await walk(p);
          else out.push(relative(store.path, p));
        }
      };
      await walk(store.path);
      return out.sort();
    },
    async cleanup() {
      await Promise.allSettled(workers.map((w) => w.close(2_000)));
      await Promise.allSettled(workerQueues.map((q) => q.close()));
      await Promise.allSettled(targets.map(async (t) => {
        await t.proxy.close();
        await t.node.kill();
      }));
      await queue.close();
      await store.cleanup();
    },
  };
}
