/**
 * Downloads that fit HTTP, end to end as a user meets them: a real capture of a
 * Node target taken by `bin/heapcap serve` into MinIO, then fetched with the
 * real curl. `curl --compressed` transfers the stored gzip's size and writes
 * the snapshot; a plain download cut off part way (curl killed once it has a
 * third of the bytes) and resumed with `curl -C -` ends with the snapshot's
 * exact bytes (the sha256 the capture recorded).
 *
 * The target holds HEAP_MB=40 (a ~70 MB snapshot) in `npm test`;
 * HEAPCAP_TEST_BIG_DOWNLOAD=1 grows it to HEAP_MB=170 (a ~300 MB snapshot),
 * too slow for every run on 2 cores (a minute of capture alone).
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { fixturePath, heapcapS3Env, onProcessExit, startDevServe, startMinio, startNodeTarget, startRedis, tmpDir, waitFor, type MinioServer, type NodeTarget, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';

const run = promisify(execFile);
const BIG = process.env['HEAPCAP_TEST_BIG_DOWNLOAD'] === '1';
const HEAP_MB = BIG ? 170 : 40;
const BUCKET = 'heapcap-downloads';

/** The parts of the capture record (GET /v1/captures/:id) the test reads. */
interface CaptureRecord {
  id: string;
  status: string;
  error: unknown;
  artifact: { bytesUncompressed: number; bytesStored: number; sha256: string; gzip: boolean } | null;
}

let redis: RedisServer;
let minio: MinioServer;
let target: NodeTarget;
let work: TmpDir;
let serve: RunningHeapcap;
let record: CaptureRecord;
let url: string;

before(async () => {
  [redis, minio, work, target] = await Promise.all([startRedis(), startMinio(), tmpDir('heapcap-curl'), startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: String(HEAP_MB) }, readyTimeoutMs: 120_000 })]);
  await minio.createBucket(BUCKET);
  await writeFile(join(work.path, 'targets.yaml'), `targets:\n  - id: big-heap\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n`);
  serve = await startDevServe(work.path, redis.url, heapcapS3Env(minio, `s3://${BUCKET}/captures`));
  const res = await fetch(`${serve.url}/v1/captures?wait=240`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    // force: this machine's free memory is not what the test is about (the headroom gate has its own tests).
    body: JSON.stringify({ target: 'big-heap', reason: 'download test', force: true }),
    signal: AbortSignal.timeout(250_000),
  });
  assert.equal(res.status, 200, await res.clone().text());
  ({ capture: record } = (await res.json()) as { capture: CaptureRecord });
  assert.equal(record.status, 'succeeded', JSON.stringify(record.error));
  assert.equal(record.artifact?.gzip, true);
  url = `${serve.url}/v1/captures/${record.id}/artifact`;
  console.log(`HEAP_MB=${HEAP_MB}: snapshot ${record.artifact!.bytesUncompressed} bytes, ${record.artifact!.bytesStored} stored (gzip)`);
});
after(async () => {
  await serve?.stop();
  await target?.kill();
  await Promise.all([redis?.stop(), minio?.stop()]);
  await work?.cleanup();
});

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** curl ARGS; its status code and bytes received (`-w`). */
async function curl(...args: string[]): Promise<{ status: number; downloaded: number }> {
  const { stdout } = await run('curl', ['-sS', '-w', '%{http_code} %{size_download}', ...args], { timeout: 180_000 });
  const [status, downloaded] = stdout.trim().split(' ').map(Number);
  return { status: status!, downloaded: downloaded! };
}

void test('curl --compressed transfers the stored gzip size and writes the snapshot', async () => {
  const out = join(work.path, 'compressed.heapsnapshot');
  const t0 = Date.now();
  const res = await curl('--compressed', '-o', out, url);
  assert.equal(res.status, 200);
  assert.equal(res.downloaded, record.artifact!.bytesStored, 'bytes on the wire: the stored size');
  assert.ok(res.downloaded < record.artifact!.bytesUncompressed / 3, 'a fraction of the JSON');
  assert.equal((await stat(out)).size, record.artifact!.bytesUncompressed);
  assert.equal(await sha256Of(out), record.artifact!.sha256);
  console.log(`curl --compressed: ${res.downloaded} bytes transferred for ${record.artifact!.bytesUncompressed} written, ${Date.now() - t0} ms`);
});

void test('a download killed part way resumes with curl -C - to identical bytes', async () => {
  const out = join(work.path, 'resumed.heapsnapshot');
  const whole = record.artifact!.bytesUncompressed;
  // Slow enough (the whole would take ~8 s) that the third is reached well before the end; killed, not timed out.
  const first = spawn('curl', ['-sS', '--limit-rate', String(Math.ceil(whole / 8)), '-o', out, url], { stdio: 'ignore' });
  const unregister = onProcessExit(() => first.kill('SIGKILL'));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => first.once('exit', (_code, signal) => resolve(signal)));
  await waitFor(async () => ((await stat(out).catch(() => undefined))?.size ?? 0) >= whole / 3 || undefined, { timeoutMs: 60_000, intervalMs: 20, what: 'curl to receive a third' });
  first.kill('SIGKILL');
  assert.equal(await exited, 'SIGKILL', 'curl was killed before the end');
  unregister();
  const have = (await stat(out)).size;
  assert.ok(have > 0 && have < whole, `${have} of ${whole} bytes before the resume`);

  const t0 = Date.now();
  const resumed = await curl('-C', '-', '-o', out, url);
  assert.equal(resumed.status, 206);
  assert.equal(resumed.downloaded, whole - have, 'only the rest was sent');
  assert.equal(await sha256Of(out), record.artifact!.sha256, 'identical to the captured snapshot');
  console.log(`curl -C - resumed at byte ${have} of ${whole}: ${resumed.downloaded} more bytes in ${Date.now() - t0} ms, sha256 equal`);
});
