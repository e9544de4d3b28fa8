/**
 * Sampling profiles through `heapcap serve --dev` (bin/heapcap, real Redis, a
 * real allocating Node target): POST /v1/captures with `options.kind:
 * "sampling"` stores a `.heapprofile` and says so on the record; the summary,
 * diff and analysis routes refuse it with `not_a_snapshot`; a cancel
 * mid-sampling stops the target's profiler and stores nothing; bad options are
 * 400s that name the field.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { PassThrough } from 'node:stream';
import { triggerMain } from '@heapcap/cli';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, test } from 'node:test';
import {
  fixturePath,
  FREE_PORT,
  samplingProfilerRunning,
  startCdpProxy,
  startHeapcap,
  startNodeTarget,
  startRedis,
  tmpDir,
  waitFor,
  type CdpProxy,
  type NodeTarget,
  type RedisServer,
  type RunningHeapcap,
  type TmpDir,
} from '@heapcap/testkit';

let redis: RedisServer;
let dir: TmpDir;
let target: NodeTarget;
let proxy: CdpProxy;
let serve: RunningHeapcap;

before(async () => {
  redis = await startRedis();
  dir = await tmpDir('heapcap-serve-sampling');
  target = await startNodeTarget({ script: fixturePath('allocator.cjs') });
  proxy = await startCdpProxy(target.wsUrl!);
  const targetsFile = join(dir.path, 'heapcap.targets.yaml');
  // The same process twice: directly, and through a proxy that counts the CDP calls reaching it.
  await writeFile(targetsFile, `targets:\n  - id: alloc\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n  - id: alloc-proxied\n    kind: node\n    ws: ${proxy.url}\n`);
  serve = await startHeapcap(['serve', '--dev'], {
    env: { HEAPCAP_REDIS_URL: redis.url, HEAPCAP_PORT: FREE_PORT, HEAPCAP_TARGETS_FILE: targetsFile, HEAPCAP_STORAGE: `file://${join(dir.path, 'captures')}` },
  });
});
after(async () => {
  await serve?.stop();
  await proxy?.close();
  await target?.kill();
  await redis?.stop();
  await dir?.cleanup();
});

async function api<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${serve.url}${path}`, {
    method,
    headers: body === undefined ? undefined : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(120_000),
  });
  return { status: res.status, body: (await res.json()) as T };
}

/** The parts of a capture record these tests read. */
interface CaptureRecord {
  id: string;
  status: string;
  phase: string | null;
  options: { kind: string };
  error: { code: string; phase?: string } | null;
  timings: Record<string, number> | null;
  artifact: { key: string; location: string; kind?: string; summaryKey?: string } | null;
}
type CaptureBody = { capture: CaptureRecord };
type ErrorBody = { error: { code: string; message: string; details: { fields?: { in: string; path: string; message: string }[] } } };

void test('POST /v1/captures kind sampling: the record says sampling-profile, the .heapprofile is stored, snapshot-only routes refuse it', { timeout: 180_000 }, async () => {
  const res = await api<CaptureBody>('POST', '/v1/captures?wait=60', { target: 'alloc', options: { kind: 'sampling', samplingSeconds: 2 } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const record = res.body.capture;
  assert.equal(record.status, 'succeeded', JSON.stringify(record.error));
  assert.equal(record.options.kind, 'sampling');
  assert.equal(record.artifact?.kind, 'sampling-profile');
  assert.equal(record.artifact?.summaryKey, undefined, 'no summary for a sampling profile');
  assert.match(record.artifact?.key ?? '', /\.heapprofile\.gz$/);
  assert.ok((await stat(record.artifact!.location)).isFile(), 'the stored object exists');
  const profile = JSON.parse(gunzipSync(await readFile(record.artifact!.location)).toString('utf8')) as { head: unknown; samples: unknown[] };
  assert.ok(profile.head !== undefined && profile.samples.length > 0);
  assert.ok((record.timings?.['sampling'] ?? 0) >= 2000, 'the record has the sampling phase timings');
  const manifest = JSON.parse(await readFile(record.artifact!.location.replace(/\.heapprofile\.gz$/, '.manifest.json'), 'utf8')) as { kind: string };
  assert.equal(manifest.kind, 'sampling-profile');

  const download = await fetch(`${serve.url}/v1/captures/${record.id}/artifact`, { signal: AbortSignal.timeout(30_000) });
  assert.equal(download.status, 200);
  assert.match(download.headers.get('content-disposition') ?? '', new RegExp(`${record.id}\\.heapprofile"`));
  assert.deepEqual(Object.keys((await download.json()) as object).sort(), ['head', 'samples']);

  const summary = await api<ErrorBody>('GET', `/v1/captures/${record.id}/summary`);
  assert.equal(summary.status, 409);
  assert.equal(summary.body.error.code, 'not_a_snapshot');
  const snapshot = await api<CaptureBody>('POST', '/v1/captures?wait=60', { target: 'alloc' });
  assert.equal(snapshot.body.capture.status, 'succeeded', JSON.stringify(snapshot.body.capture.error));
  assert.equal(snapshot.body.capture.artifact?.kind, undefined, 'a snapshot record keeps its old shape');
  const diff = await api<ErrorBody>('GET', `/v1/diff?base=${snapshot.body.capture.id}&head=${record.id}`);
  assert.equal(diff.status, 409);
  assert.equal(diff.body.error.code, 'not_a_snapshot');
  const analysis = await api<ErrorBody>('POST', `/v1/captures/${record.id}/analysis`);
  assert.equal(analysis.status, 409);
  assert.equal(analysis.body.error.code, 'not_a_snapshot');
});

void test('cancel mid-sampling: the worker stops the profiler itself, stores nothing, and the next capture works', { timeout: 180_000 }, async () => {
  const created = await api<CaptureBody>('POST', '/v1/captures', { target: 'alloc-proxied', options: { kind: 'sampling', samplingSeconds: 120 } });
  assert.equal(created.status, 202);
  const id = created.body.capture.id;
  await waitFor(async () => (await api<CaptureBody>('GET', `/v1/captures/${id}`)).body.capture.phase === 'sampling' && (await samplingProfilerRunning(target.wsUrl!)), {
    timeoutMs: 60_000,
    intervalMs: 100,
    what: 'the capture to be sampling',
  });
  const cancel = await api<{ result: string }>('DELETE', `/v1/captures/${id}`);
  assert.equal(cancel.status, 202);
  assert.equal(cancel.body.result, 'cancelling');
  const done = await waitFor(
    async () => {
      const r = (await api<CaptureBody>('GET', `/v1/captures/${id}`)).body.capture;
      return r.status === 'cancelled' ? r : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100, what: 'the capture to be cancelled' },
  );
  assert.equal(done.artifact, null);
  assert.equal(done.error?.phase, 'sampling');
  assert.equal(proxy.calls('HeapProfiler.stopSampling'), 1, 'the worker sent stopSampling, not only dropped the session');
  assert.equal(await samplingProfilerRunning(target.wsUrl!), false, 'nothing left sampling in the target');
  const files = await readdir(join(dir.path, 'captures'), { recursive: true });
  assert.deepEqual(files.filter((f) => f.includes(id)), [], 'no object of the cancelled capture');
  const next = await api<CaptureBody>('POST', '/v1/captures?wait=60', { target: 'alloc-proxied', options: { kind: 'sampling', samplingSeconds: 1 } });
  assert.equal(next.body.capture.status, 'succeeded', JSON.stringify(next.body.capture.error));
});

void test('bad sampling options are 400 validation_failed naming the field', { timeout: 60_000 }, async () => {
  const cases: [unknown, string][] = [
    [{ kind: 'sampling', samplingSeconds: 0 }, 'options.samplingSeconds'],
    [{ kind: 'sampling', samplingSeconds: 601 }, 'options.samplingSeconds'],
    [{ kind: 'sampling', samplingSeconds: 1.5 }, 'options.samplingSeconds'],
    [{ kind: 'foo' }, 'options.kind'],
    [{ kind: 'sampling', samplingIntervalBytes: 16 }, 'options.samplingIntervalBytes'],
  ];
  for (const [options, path] of cases) {
    const res = await api<ErrorBody>('POST', '/v1/captures', { target: 'alloc', options });
    assert.equal(res.status, 400, JSON.stringify(options));
    assert.equal(res.body.error.code, 'validation_failed');
    assert.deepEqual(
      res.body.error.details.fields?.map((f) => `${f.in}:${f.path}`),
      [`body:${path}`],
      JSON.stringify(res.body.error),
    );
  }
});

void test('heapcap trigger --sampling asks the API for a sampling profile; a bad duration is refused before any request', { timeout: 120_000 }, async () => {
  const collect = (): { stream: PassThrough; text: () => string } => {
    const stream = new PassThrough();
    let text = '';
    stream.on('data', (d: Buffer) => (text += d.toString()));
    return { stream, text: () => text };
  };
  const env = { HEAPCAP_API_URL: serve.url };
  const out = collect();
  const err = collect();
  assert.equal(await triggerMain(['alloc', '--sampling', '1s', '--wait', '60', '--json'], env, { stdout: out.stream, stderr: err.stream }), 0, err.text());
  const body = JSON.parse(out.text()) as CaptureBody;
  assert.equal(body.capture.status, 'succeeded');
  assert.equal(body.capture.options.kind, 'sampling');
  assert.equal(body.capture.artifact?.kind, 'sampling-profile');
  const bad = collect();
  assert.equal(await triggerMain(['alloc', '--sampling', '0s'], env, { stdout: collect().stream, stderr: bad.stream }), 2);
  assert.match(bad.text(), /invalid_input: --sampling "0s" must be whole seconds from 1s to 600s/);
});
