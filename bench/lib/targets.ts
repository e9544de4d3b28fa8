/**
 * The bench targets, started through the test kit's launcher: the one-line
 * bundle (slow snapshots on V8 < 11.5.130) and the heap holder (a known
 * amount of live objects, optionally with the CPU-loop command).
 *
 * Every target registered here is killed by {@link withTarget} when the
 * measurement ends, and by the test kit's exit hook if the bench process dies.
 */
import { fixturePath, startNodeTarget, type NodeTarget, type NodeVersion } from '@heapcap/testkit';

/** A started target plus its inspector `host:port`. */
export interface BenchTarget {
  target: NodeTarget;
  inspect: string;
}

/**
 * The bundle target: loads a BUNDLE_FUNCTIONS-unit one-line bundle generated
 * into `bundleDir`. 40,000 units give the ~76 MB snapshot of INSPECTOR-FACTS.
 */
export function bundleTarget(node: NodeVersion, bundleDir: string, functions: number): Promise<BenchTarget> {
  return start({
    node,
    script: fixturePath('bundle-target.cjs'),
    env: { BUNDLE_DIR: bundleDir, BUNDLE_FUNCTIONS: String(functions) },
    // Generating and compiling the bundle takes a few seconds on a busy 2-core box.
    readyTimeoutMs: 120_000,
  });
}

/** The heap holder: keeps `heapMb` MB of Order/LineItem objects; `cpuLoop` enables `spin N`. */
export function heapHolderTarget(node: NodeVersion, heapMb: number, cpuLoop = false): Promise<BenchTarget> {
  return start({
    node,
    script: fixturePath('heap-holder.cjs'),
    env: { HEAP_MB: String(heapMb), ...(cpuLoop ? { CPU_LOOP: '1' } : {}) },
    // 300 MB of objects take ~20 s to build here; room for a loaded machine.
    readyTimeoutMs: 300_000,
  });
}

async function start(opts: Parameters<typeof startNodeTarget>[0]): Promise<BenchTarget> {
  const target = await startNodeTarget(opts);
  if (target.port === undefined) {
    await target.kill('SIGKILL');
    throw new Error(`${opts.script} started without an inspector port`);
  }
  return { target, inspect: `127.0.0.1:${target.port}` };
}

/** Run `fn` with a freshly started target and always kill it afterwards. */
export async function withTarget<T>(starting: Promise<BenchTarget>, fn: (t: BenchTarget) => Promise<T>): Promise<T> {
  const t = await starting;
  try {
    return await fn(t);
  } finally {
    await t.target.kill('SIGKILL');
  }
}
