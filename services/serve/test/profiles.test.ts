/**
 * Allocation profiles through `heapcap serve --dev` (bin/heapcap, real Redis,
 * a real Node target that allocates on command): a sampling capture's summary by allocation
 * site, its pprof export read by `go tool pprof -top` with the same top site,
 * `profile_not_found` for a heap snapshot.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { PassThrough } from 'node:stream';
import { profilesMain } from '@heapcap/cli';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { fixturePath, runHeapcap, startDevServe, startNodeTarget, startRedis, tmpDir, waitFor, type NodeTarget, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';

let redis: RedisServer;
let dir: TmpDir;
let target: NodeTarget;
let serve: RunningHeapcap;

before(async () => {
  redis = await startRedis();
  dir = await tmpDir('heapcap-serve-profiles');
  target = await startNodeTarget({ script: fixturePath('alloc-sites.cjs') });
  await writeFile(join(dir.path, 'targets.yaml'), `targets:\n  - id: alloc\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n`);
  serve = await startDevServe(dir.path, redis.url);
});
after(async () => {
  await serve?.stop();
  await target?.kill();
  await redis?.stop();
  await dir?.cleanup();
});

/** A JSON call to the serve: status and parsed body. */
async function api<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${serve.url}${path}`, { method, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }), signal: AbortSignal.timeout(120_000) });
  return { status: res.status, body: (await res.json()) as T };
}

type CaptureBody = { capture: { id: string; status: string; phase: string | null; error: { code: string } | null; artifact: { kind?: string } | null } };
type ErrorBody = { error: { code: string; message: string } };
/** The parts of a profile summary these tests read. */
interface Site {
  functionName: string;
  url: string;
  line: number;
  bytes: number;
  objects: number;
}
type ProfileBody = { captureId: string; targetId: string; profile: { samplingIntervalBytes: number | null; totalBytes: number; sites: Site[]; stacks: { frames: Site[] }[] } };

/** Waits for a capture to end; its id once it succeeded. */
async function succeeded(id: string): Promise<string> {
  const done = await waitFor(
    async () => {
      const r = (await api<CaptureBody>('GET', `/v1/captures/${id}`)).body.capture;
      return ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 100, what: `capture ${id} to end` },
  );
  assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
  return id;
}

/** A heap snapshot of `alloc`. */
async function snapshot(): Promise<string> {
  return succeeded((await api<CaptureBody>('POST', '/v1/captures', { target: 'alloc' })).body.capture.id);
}

/** A sampling profile of `alloc` during which the target runs `command` (e.g. `leak 20000`: createSession, kept). */
async function profileWhile(command: string, reply: string): Promise<string> {
  // 10 s: the command must run inside the window, and on a loaded host a poll can take a second or more.
  const id = (await api<CaptureBody>('POST', '/v1/captures', { target: 'alloc', options: { kind: 'sampling', samplingSeconds: 10, samplingIntervalBytes: 8192 } })).body.capture.id;
  const seen = await waitFor(
    async () => {
      const r = (await api<CaptureBody>('GET', `/v1/captures/${id}`)).body.capture;
      return r.phase === 'sampling' || ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 50, what: 'the capture to be sampling' },
  );
  assert.equal(seen.phase, 'sampling', `capture ${id} ended (${seen.status}) before this test saw it sampling: ${JSON.stringify(seen.error)}`);
  await target.request(command, reply);
  return succeeded(id);
}

/** The flat entries of `go tool pprof -top` (name, flat value as printed), first the largest. */
async function pprofTop(file: string, sampleIndex: string): Promise<{ flat: string; name: string }[]> {
  const { stdout } = await promisify(execFile)('go', ['tool', 'pprof', `-sample_index=${sampleIndex}`, '-top', file], { timeout: 240_000 });
  const rows = stdout.split('\n').slice(stdout.split('\n').findIndex((l) => /^\s*flat\s+flat%/.test(l)) + 1);
  return rows.filter((l) => l.trim() !== '').map((l) => {
    const cols = l.trim().split(/\s+/);
    return { flat: cols[0]!, name: cols.slice(5).join(' ') };
  });
}

let profileId: string;

void test('GET /v1/captures/:id/profile: live bytes by allocation site, the leaking function first, at its script and position', { timeout: 180_000 }, async () => {
  profileId = await profileWhile('leak 20000', 'LEAKED');
  const res = await api<ProfileBody>('GET', `/v1/captures/${profileId}/profile?limit=5`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const p = res.body.profile;
  assert.equal(p.samplingIntervalBytes, 8192, "the capture's interval, for the estimate of objects");
  assert.ok(p.sites.length <= 5 && p.sites.length > 0);
  const top = p.sites[0]!;
  // leakSessions calls createSession in a hot loop: optimized, V8 inlines it (and Session) and names leakSessions alone.
  const leak = ['Session', 'createSession', 'leakSessions'];
  assert.ok(leak.includes(top.functionName), JSON.stringify(p.sites));
  assert.equal(top.url, fixturePath('alloc-sites.cjs'));
  assert.ok(top.line > 0);
  // Until TurboFan optimizes the loop, the callees allocate under their own names: the leak's three sites together.
  const leakBytes = p.sites.filter((s) => leak.includes(s.functionName)).reduce((n, s) => n + s.bytes, 0);
  assert.ok(leakBytes > 0.5 * p.totalBytes, JSON.stringify(p.sites));
  assert.ok(p.stacks[0]!.frames.length > 0);
});

void test('GET /v1/captures/:id/profile?format=pprof: gzipped pprof that go tool pprof -top reads, with the same top site by space and by objects', { timeout: 300_000 }, async () => {
  const summary = (await api<ProfileBody>('GET', `/v1/captures/${profileId}/profile?limit=1000`)).body.profile;
  const res = await fetch(`${serve.url}/v1/captures/${profileId}/profile?format=pprof`, { signal: AbortSignal.timeout(60_000) });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-disposition') ?? '', new RegExp(`alloc-\\d{8}T\\d{6}Z-${profileId}\\.pb\\.gz"`));
  const bytes = Buffer.from(await res.arrayBuffer());
  assert.deepEqual([...bytes.subarray(0, 2)], [0x1f, 0x8b], 'gzip');
  const file = join(dir.path, 'alloc.pb.gz');
  await writeFile(file, bytes);
  const space = await pprofTop(file, 'inuse_space');
  assert.equal(space[0]?.name, summary.sites[0]!.functionName, `go tool pprof -top:\n${JSON.stringify(space.slice(0, 3))}`);
  const objects = await pprofTop(file, 'inuse_objects');
  const byObjects = [...summary.sites].sort((a, b) => b.objects - a.objects)[0]!;
  assert.equal(objects[0]?.name, byObjects.functionName || '(anonymous)');
  assert.equal(objects[0]?.flat, String(byObjects.objects), 'the same estimate of objects');
});

void test('a heap snapshot has no allocation profile: 404 profile_not_found with what to do; an unknown capture 404 not_found; a bad format 400', { timeout: 180_000 }, async () => {
  const snapshotId = await snapshot();
  for (const q of ['', '?format=pprof']) {
    const res = await api<ErrorBody>('GET', `/v1/captures/${snapshotId}/profile${q}`);
    assert.equal(res.status, 404);
    assert.equal(res.body.error.code, 'profile_not_found');
    assert.match(res.body.error.message, /heap snapshot, which has no allocation profile; take one with .*"kind": "sampling"/);
  }
  assert.equal((await api<ErrorBody>('GET', '/v1/captures/01M7ZHH716228KMD1V49A92AEZ/profile')).body.error.code, 'not_found');
  const bad = await api<ErrorBody>('GET', `/v1/captures/${profileId}/profile?format=svg`);
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.code, 'validation_failed');
});

/** Runs `heapcap profiles ARGS` against the serve; exit code, stdout and stderr. */
async function profilesCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  let stdout = '';
  let stderr = '';
  out.on('data', (d: Buffer) => (stdout += d.toString()));
  err.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await profilesMain(args, { HEAPCAP_API_URL: serve.url }, { stdout: out, stderr: err });
  return { code, stdout, stderr };
}

void test('heapcap profiles list|show|download TARGET|ID: the profiles of a target, the sites, the .heapprofile and its pprof', { timeout: 300_000 }, async () => {
  const list = await profilesCli(['list', 'alloc', '--json']);
  assert.equal(list.code, 0, list.stderr);
  const ids = (JSON.parse(list.stdout) as { items: { id: string; artifact: { kind: string } }[] }).items.map((c) => c.id);
  assert.ok(ids.includes(profileId), 'the profile is listed');
  const table = await profilesCli(['list', 'alloc']);
  assert.match(table.stdout, new RegExp(`${profileId} +alloc .* 10 s +8 KiB`));

  const show = await profilesCli(['show', 'alloc', '--top', '3']);
  assert.equal(show.code, 0, show.stderr);
  const newest = ids[0]!;
  assert.match(show.stdout, new RegExp(`^allocation profile ${newest} of alloc: `));
  assert.match(show.stdout, /LIVE +SHARE +OBJECTS +ALLOCATED AT\n/);
  assert.match(show.stdout, /top stack \([\d.]+ MiB\):\n  (Session|createSession|leakSessions) \/.*alloc-sites\.cjs:\d+:\d+\n  ← /);

  const heapprofile = await profilesCli(['download', profileId, '--dir', dir.path, '--json']);
  assert.equal(heapprofile.code, 0, heapprofile.stderr);
  const saved = JSON.parse(heapprofile.stdout) as { file: string; format: string };
  assert.match(saved.file, new RegExp(`alloc-\\d{8}T\\d{6}Z-${profileId}\\.heapprofile$`));
  assert.deepEqual(Object.keys(JSON.parse(await readFile(saved.file, 'utf8')) as object).sort(), ['head', 'samples'], 'the .heapprofile DevTools loads');
  const pprof = await profilesCli(['download', profileId, '--pprof', '-o', join(dir.path, 'cli.pb.gz')]);
  assert.equal(pprof.code, 0, pprof.stderr);
  assert.match(pprof.stdout, /go tool pprof -top .*cli\.pb\.gz/);
  const summary = (await api<ProfileBody>('GET', `/v1/captures/${profileId}/profile`)).body.profile;
  assert.equal((await pprofTop(join(dir.path, 'cli.pb.gz'), 'inuse_space'))[0]?.name, summary.sites[0]!.functionName);

  const none = await profilesCli(['show', 'no-such-target']);
  assert.equal(none.code, 2, none.stderr);
  assert.match(none.stderr, /profile_not_found: target no-such-target has no succeeded allocation profile; take one: heapcap trigger no-such-target --sampling 30s/);
});

void test('GET /v1/diff of two sampling profiles: diff null, allocations ranks the leaking site first; heapcap diff prints it; a profile against a snapshot stays not_a_snapshot', { timeout: 300_000 }, async () => {
  const base = await profileWhile('cache 2000', 'CACHED');
  const head = await profileWhile('leak 30000', 'LEAKED');
  type DiffBody = { diff: unknown; allocations: { grown: { functionName: string; url: string; baseBytes: number; headBytes: number; bytesDelta: number }[]; totalBytesDelta: number } | null };
  const res = await api<DiffBody>('GET', `/v1/diff?base=${base}&head=${head}&limit=3`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.diff, null);
  const grown = res.body.allocations!.grown;
  assert.ok(grown.length <= 3);
  assert.ok(['Session', 'createSession', 'leakSessions'].includes(grown[0]!.functionName) && grown[0]!.url === fixturePath('alloc-sites.cjs'), JSON.stringify(grown));
  assert.ok(grown[0]!.bytesDelta > 1024 * 1024 && grown[0]!.bytesDelta === grown[0]!.headBytes - grown[0]!.baseBytes, JSON.stringify(grown[0]));

  const cli = await runHeapcap(['diff', base, head, '--top', '2'], { env: { HEAPCAP_API_URL: serve.url }, timeoutMs: 180_000 });
  assert.equal(cli.code, 0, cli.stderr);
  const printed = cli.stdout;
  assert.match(printed, new RegExp(`^allocation sites from capture ${base} \\(alloc\\) to capture ${head} \\(alloc\\): live \\+`));
  assert.match(printed, /GROWTH +BASE +HEAD +ALLOCATED AT\n\+[\d.]+ MiB .*(Session|createSession|leakSessions) \/.*alloc-sites\.cjs:\d+:\d+\n/);

  const snapshotId = await snapshot();
  const mixed = await api<ErrorBody>('GET', `/v1/diff?base=${snapshotId}&head=${head}`);
  assert.equal(mixed.status, 409);
  assert.equal(mixed.body.error.code, 'not_a_snapshot');
});
