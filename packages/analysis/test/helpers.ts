/** Shared by the analysis tests: the leak target, snapshots taken by the real capture CLI, random chunking. */
import { fileURLToPath } from 'node:url';
import { runHeapcapHere, startNodeTarget, type NodeTarget, type NodeVersion } from '@heapcap/testkit';

/** Starts the leak fixture (packages/analysis/test/fixtures/leak-target.cjs). */
export function startLeakTarget(node: NodeVersion = 'system'): Promise<NodeTarget> {
  return startNodeTarget({ node, script: fileURLToPath(new URL('./fixtures/leak-target.cjs', import.meta.url)) });
}

/** Has the target write an in-process snapshot (V8's own writer; heap profiler ids kept). */
export async function writeSnapshot(target: NodeTarget, path: string): Promise<string> {
  await target.request(`snapshot ${path}`, 'WROTE', 300_000);
  return path;
}

/** Captures a target over CDP with `heapcap capture ARGS --out DIR --no-gzip --json`; returns the snapshot file. */
export async function captureWithCli(args: string[], outDir: string): Promise<string> {
  const res = await runHeapcapHere(['capture', ...args, '--out', outDir, '--no-gzip', '--json'], { timeoutMs: 300_000 });
  if (res.code !== 0) throw new Error(`heapcap capture ${args.join(' ')} exited ${res.code}:\n${res.stderr}`);
  return (JSON.parse(res.stdout) as { artifact: { location: string } }).artifact.location;
}

/** A deterministic pseudo-random generator (xorshift32), so a failing chunking can be replayed from its seed. */
export function random(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
}

/** Splits `bytes` at the given offsets (sorted, deduplicated), copying each piece. */
export function splitAt(bytes: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.filter((c) => c > 0 && c < bytes.length))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const p of [...points, bytes.length]) {
    out.push(Buffer.from(bytes.subarray(from, p)));
    from = p;
  }
  return out;
}
