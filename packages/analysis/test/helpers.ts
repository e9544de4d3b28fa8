/** Shared by the analysis tests: the leak target, snapshots taken by the real capture CLI, random chunking. */
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { fixturePath, runHeapcapHere, startNodeTarget, startSamplingSession, type NodeTarget, type NodeVersion, type SamplingSession } from '@heapcap/testkit';

/** Starts the leak fixture (packages/analysis/test/fixtures/leak-target.cjs). */
export function startLeakTarget(node: NodeVersion = 'system'): Promise<NodeTarget> {
  return startNodeTarget({ node, script: fileURLToPath(new URL('./fixtures/leak-target.cjs', import.meta.url)) });
}

/** A testkit alloc-sites.cjs target under a test's own sampling session, and the two profiles it took. */
export interface SampledRun {
  target: NodeTarget;
  session: SamplingSession;
  /** The fixture's script URL, as V8's frames name it. */
  url: string;
  first: unknown;
  second: unknown;
}

/** alloc-sites.cjs on `node`, sampled every `intervalBytes`: `before` commands, a profile, `between` commands, a profile. */
export async function sampleAllocSites(node: NodeVersion, intervalBytes: number, before: [string, string][], between: [string, string][]): Promise<SampledRun> {
  const target = await startNodeTarget({ node, script: fixturePath('alloc-sites.cjs') });
  const session = await startSamplingSession(target.wsUrl!, intervalBytes);
  const url = (JSON.parse((await target.request('where', 'WHERE')).slice('WHERE '.length)) as { url: string }).url;
  for (const [command, reply] of before) await target.request(command, reply);
  const first = await session.profile();
  for (const [command, reply] of between) await target.request(command, reply);
  const second = await session.profile();
  return { target, session, url, first, second };
}

/** The Node versions the sampling tests run on ('system' is Node 20 on this machine). */
export const SAMPLED_VERSIONS: NodeVersion[] = ['system', '22', '24'];

/** One run per version of {@link SAMPLED_VERSIONS}, made before the file's tests, its targets stopped after them. */
export function sampledRuns(run: (node: NodeVersion) => Promise<SampledRun>): Map<NodeVersion, SampledRun> {
  const runs = new Map<NodeVersion, SampledRun>();
  before(async () => {
    for (const v of SAMPLED_VERSIONS) runs.set(v, await run(v));
  });
  after(async () => {
    for (const r of runs.values()) {
      await r.session.close().catch(() => undefined);
      await r.target.kill();
    }
  });
  return runs;
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
