/**
 * A real local Redis Cluster: three masters (`--cluster-enabled yes`), no
 * replicas, joined with `redis-cli --cluster create`. Each master keeps an
 * append-only file (fsync always) in its own directory, so restarting one
 * (a fault test) brings it back with its slots and its data, as a production
 * master with persistence comes back.
 */
import { execFile } from 'node:child_process';
import { freePort, tmpDir, waitFor, type TmpDir } from './proc.ts';
import { onProcessExit } from './reaper.ts';
import { launch, redisCli, type Running } from './redis.ts';

export interface RedisCluster {
  /** `redis+cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3`: what HEAPCAP_REDIS_URL takes. */
  url: string;
  /** The masters' ports, in the order they were created. */
  ports: readonly number[];
  /** Stops master `i` (SIGTERM: it flushes its AOF), starts it again on the same port and waits for cluster_state:ok. */
  restartMaster(i: number): Promise<void>;
  /** The port of the master that serves `key`'s slot. */
  masterOf(key: string): Promise<number>;
  /** One `redis-cli` command against master `i`: its output, trimmed. */
  cli(i: number, ...args: string[]): Promise<string>;
  /** Stops every master and removes their directories. Idempotent. */
  stop(): Promise<void>;
}

const MASTERS = 3;
const READY_TIMEOUT_MS = 30_000;

function nodeArgs(port: number): string[] {
  return [
    '--cluster-enabled', 'yes',
    '--cluster-config-file', `nodes-${port}.conf`,
    // The default 15 s would keep a restarted master's peers marking it failed long after it is back.
    '--cluster-node-timeout', '2000',
    '--save', '',
    '--appendonly', 'yes',
    '--appendfsync', 'always',
  ];
}

function createCluster(ports: readonly number[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      'redis-cli',
      ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'],
      { timeout: 30_000 },
      (err, stdout, stderr) => (err === null ? resolve() : reject(new Error(`redis-cli --cluster create failed: ${err.message}\n${stdout}${stderr}`))),
    );
  });
}

/** Every master says cluster_state:ok and knows all three masters. */
async function clusterOk(ports: readonly number[]): Promise<boolean> {
  for (const port of ports) {
    const info = await redisCli(port, ['CLUSTER', 'INFO']);
    if (!/cluster_state:ok/.test(info) || !new RegExp(`cluster_known_nodes:${MASTERS}\\b`).test(info)) return false;
  }
  return true;
}

/** Starts three fresh masters, joins them into one cluster and waits (with a deadline) until every node reports cluster_state:ok. */
export async function startRedisCluster(): Promise<RedisCluster> {
  const dirs: TmpDir[] = [];
  const nodes: Running[] = [];
  const ports: number[] = [];
  const unregister = onProcessExit(() => {
    for (const d of dirs) d.cleanupSync();
  });
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      await Promise.all(nodes.map((n) => n.stop()));
      unregister();
      await Promise.all(dirs.map((d) => d.cleanup()));
    })());
  const waitOk = (): Promise<boolean> =>
    waitFor(() => clusterOk(ports), { timeoutMs: READY_TIMEOUT_MS, intervalMs: 100, what: `cluster_state:ok on ports ${ports.join(', ')}` });
  try {
    for (let i = 0; i < MASTERS; i++) {
      const dir = await tmpDir(`heapcap-redis-cluster-${i}`);
      dirs.push(dir);
      // A port free a moment ago; redis-server's start fails loudly if another process took it meanwhile.
      const port = await freePort();
      nodes.push(await launch(port, dir, nodeArgs(port)));
      ports.push(port);
    }
    await createCluster(ports);
    await waitOk();
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url: `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`,
    ports,
    restartMaster: async (i) => {
      if (stopped) throw new Error('the cluster was stopped');
      const node = nodes[i];
      const dir = dirs[i];
      const port = ports[i];
      if (node === undefined || dir === undefined || port === undefined) throw new Error(`no master ${i}`);
      await node.stop();
      nodes[i] = await launch(port, dir, nodeArgs(port));
      await waitOk();
    },
    masterOf: async (key) => {
      const slot = Number(await redisCli(ports[0] ?? 0, ['CLUSTER', 'KEYSLOT', key]));
      const shards = await redisCli(ports[0] ?? 0, ['CLUSTER', 'SLOTS']);
      // redis-cli prints CLUSTER SLOTS as lines: start, end, ip, port, id, … per range.
      const lines = shards.split('\n').map((l) => l.trim());
      for (let j = 0; j + 3 < lines.length; j++) {
        const start = Number(lines[j]);
        const end = Number(lines[j + 1]);
        if (lines[j + 2] === '127.0.0.1' && Number.isInteger(start) && Number.isInteger(end) && slot >= start && slot <= end) return Number(lines[j + 3]);
      }
      throw new Error(`no master serves slot ${slot}:\n${shards}`);
    },
    cli: (i, ...args) => redisCli(ports[i] ?? 0, args),
    stop,
  };
}
