/**
 * One test's world, shared by every service's tests: a fresh key prefix on a
 * real Redis, a file store in a temp directory, Node targets (optionally behind
 * a CDP proxy) registered in the registry, and one cleanup for all of it. The
 * API and worker harnesses add their service on top.
 */
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
// Types only at the top: @heapcap/state and @heapcap/storage (ioredis, BullMQ, the AWS SDK) load when a world
// is made, not in every test file that imports the test kit (about 1 CPU-s a file).
import type { HeapcapQueue, QueueOptions, Target } from '@heapcap/state';
import type { ArtifactStore } from '@heapcap/storage';
import { startCdpProxy, type CdpProxy } from './cdp-proxy.ts';
import { fixturePath } from './fixtures.ts';
import { startNodeTarget, type NodeTarget } from './node-target.ts';
import { tmpDir, type TmpDir } from './proc.ts';

/** A Node target the world started, with the proxy in front of it. */
export interface WorldTarget {
  id: string;
  node: NodeTarget;
  proxy: CdpProxy;
}

/** Everything one test needs around a service. */
export interface TestWorld {
  prefix: string;
  redisUrl: string;
  /** Options for more queues on the same prefix (a second process's own connections). */
  queueOptions: QueueOptions;
  /** The world's own queue (the api side's connections). */
  queue: HeapcapQueue;
  storeDir: TmpDir;
  store: ArtifactStore;
  /** Start a heap-holder target (HEAP_MB) behind a CDP proxy and register it as `id`. */
  addTarget(id: string, heapMb: number, labels?: Record<string, string>): Promise<WorldTarget>;
  /** Another queue on the world's prefix; closed in cleanup. */
  newQueue(): HeapcapQueue;
  /** Files under the store, relative, sorted (includes dot-files such as temp files). */
  storedFiles(): Promise<string[]>;
  /** Run `fn` first in cleanup (services before the queues and targets they use). */
  onCleanup(fn: () => Promise<unknown>): void;
  /** Close everything; idempotent. */
  cleanup(): Promise<void>;
}

/** A new world on `redisUrl`: the registry holds `targets` as if synced from a targets file. */
export async function createTestWorld(redisUrl: string, options: { queue?: Partial<QueueOptions>; targets?: Target[]; storePrefix?: string } = {}): Promise<TestWorld> {
  const prefix = `t${randomBytes(4).toString('hex')}`;
  const queueOptions: QueueOptions = { redisUrl, prefix, ...options.queue };
  const [{ createQueue }, { createFileSink }] = await Promise.all([import('@heapcap/state'), import('@heapcap/storage')]);
  const queue = createQueue(queueOptions);
  const storeDir = await tmpDir(options.storePrefix ?? 'heapcap-store');
  const store = createFileSink({ dir: storeDir.path });
  const queues: HeapcapQueue[] = [];
  const targets: WorldTarget[] = [];
  const firsts: (() => Promise<unknown>)[] = [];
  let closed: Promise<void> | undefined;
  const world: TestWorld = {
    prefix,
    redisUrl,
    queueOptions,
    queue,
    storeDir,
    store,
    async addTarget(id, heapMb, labels = { service: 'test' }) {
      const node = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: String(heapMb) } });
      const proxy = await startCdpProxy(node.wsUrl ?? '');
      const t = { id, node, proxy };
      targets.push(t);
      await queue.targets.put({ id, kind: 'node', ws: proxy.url, labels });
      return t;
    },
    newQueue() {
      const q = createQueue(queueOptions);
      queues.push(q);
      return q;
    },
    async storedFiles() {
      const out: string[] = [];
      const walk = async (dir: string): Promise<void> => {
        for (const e of await readdir(dir, { withFileTypes: true })) {
          const p = join(dir, e.name);
          if (e.isDirectory()) await walk(p);
          else out.push(relative(storeDir.path, p));
        }
      };
      await walk(storeDir.path);
      return out.sort();
    },
    onCleanup(fn) {
      firsts.push(fn);
    },
    cleanup: () =>
      (closed ??= (async () => {
        await Promise.allSettled(firsts.map((fn) => fn()));
        await Promise.allSettled(queues.map((q) => q.close()));
        await Promise.allSettled(
          targets.map(async (t) => {
            await t.proxy.close();
            await t.node.kill();
          }),
        );
        await queue.close().catch(() => undefined);
        await storeDir.cleanup();
      })()),
  };
  try {
    // As a service does at start-up: the registry holds the targets file (readiness checks it).
    await queue.targets.syncFromFile(options.targets ?? []);
  } catch (err) {
    await world.cleanup();
    throw err;
  }
  return world;
}
