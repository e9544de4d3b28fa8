/**
 * Downloads that fit HTTP, measured with curl against a real MinIO: the stored
 * gzip travels as it is with `Content-Encoding: gzip` to a client that accepts
 * it (`curl --compressed` transfers the stored size), the file is named
 * `<target>-<UTC time>-<id>.heapsnapshot`, and `Range` resumes an interrupted
 * download (`curl -C -`) with identical bytes: of the JSON for a plain
 * download, of the stored gzip for `?encoding=gzip` and gzip-encoded ones.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, stat, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { CaptureRecord } from '@heapcap/state';
import { createS3Sink, type ArtifactStore } from '@heapcap/storage';
import { startMinio, startRedis, tmpDir, type MinioServer, type RedisServer, type TmpDir } from '@heapcap/testkit';
import { nodeTarget, startHarness, storeSucceededCapture, TOKENS, type Harness } from './harness.ts';

const run = promisify(execFile);
const BUCKET = 'heapcap-http-test';

void describe('artifact downloads over HTTP (curl, MinIO)', () => {
  let redis: RedisServer;
  let minio: MinioServer;
  let dir: TmpDir;
  let sink: ArtifactStore;
  let h: Harness;
  let snapshot: Buffer;
  let gzipped: Buffer;
  let record: CaptureRecord;
  let url: string;

  before(async () => {
    [redis, minio, dir] = await Promise.all([startRedis(), startMinio(), tmpDir('heapcap-api-http')]);
    await minio.createBucket(BUCKET);
    sink = createS3Sink({ bucket: BUCKET, prefix: 'captures', endpoint: minio.endpoint, credentials: { accessKeyId: minio.accessKey, secretAccessKey: minio.secretKey } });
    h = await startHarness({ redisUrl: redis.url, sink, targets: [nodeTarget('checkout-1', 9229)] });
    // A real snapshot of a child Node process holding 300,000 objects and strings (tens of MB of JSON).
    const path = join(dir.path, 'child.heapsnapshot');
    await run(process.execPath, ['-e', 'globalThis.keep = Array.from({length: 300000}, (_, i) => ({i, s: "order-" + i})); require("node:v8").writeHeapSnapshot(process.argv[1])', path], { timeout: 120_000 });
    snapshot = await readFile(path);
    record = await storeSucceededCapture(h, sink, 'checkout-1', path);
    gzipped = await buffer(await sink.open(record.artifact!.key));
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/v1/captures/${record.id}/artifact`;
  });

  after(async () => {
    await h?.close();
    await sink?.close();
    await Promise.all([redis?.stop(), minio?.stop(), dir?.cleanup()]);
  });

  /** curl ARGS with the token; its `-w` output (status and bytes received) and exit code. */
  async function curl(...args: string[]): Promise<{ code: number; status: number; downloaded: number; headers: string }> {
    const headers = join(dir.path, 'headers.txt');
    try {
      const { stdout } = await run('curl', ['-sS', '-D', headers, '-H', `Authorization: Bearer ${TOKENS.runbook}`, '-w', '%{http_code} %{size_download}', ...args], { timeout: 120_000, maxBuffer: 1 << 20 });
      const [status, downloaded] = stdout.trim().split(' ').map(Number);
      return { code: 0, status: status!, downloaded: downloaded!, headers: await readFile(headers, 'utf8') };
    } catch (err) {
      const e = err as { code: number; stdout: string };
      const [status, downloaded] = e.stdout.trim().split(' ').map(Number);
      return { code: e.code, status: status!, downloaded: downloaded!, headers: await readFile(headers, 'utf8').catch(() => '') };
    }
  }

  void it('curl --compressed receives the stored gzip (Content-Encoding: gzip) and writes the JSON; without it, the JSON', async () => {
    const out = join(dir.path, 'compressed.heapsnapshot');
    const compressed = await curl('--compressed', '-o', out, url);
    assert.equal(compressed.status, 200);
    assert.equal(compressed.downloaded, record.artifact!.bytesStored, 'bytes on the wire: the stored size');
    assert.match(compressed.headers, /^content-encoding: gzip\r$/im);
    assert.match(compressed.headers, /^vary: accept-encoding\r$/im);
    assert.ok((await readFile(out)).equals(snapshot), 'curl decoded it to the snapshot JSON');
    const plain = await curl('-o', join(dir.path, 'plain.heapsnapshot'), url);
    assert.equal(plain.downloaded, snapshot.length);
    assert.doesNotMatch(plain.headers, /^content-encoding:/im);
    console.log(`snapshot ${snapshot.length} bytes of JSON, ${record.artifact!.bytesStored} stored: curl --compressed transferred ${compressed.downloaded}, plain curl ${plain.downloaded}`);
  });

  void it('Content-Disposition names the file <target>-<UTC time>-<id>.heapsnapshot (.gz with ?encoding=gzip)', async () => {
    const time = record.createdAt.replace(/\.\d+Z$/, 'Z').replace(/[-:]/g, '');
    assert.match(time, /^\d{8}T\d{6}Z$/);
    const plain = await fetch(url, { headers: { authorization: `Bearer ${TOKENS.runbook}` } });
    await plain.body?.cancel();
    assert.equal(plain.headers.get('content-disposition'), `attachment; filename="checkout-1-${time}-${record.id}.heapsnapshot"`);
    assert.equal(plain.headers.get('accept-ranges'), 'bytes');
    const gz = await curl('-o', join(dir.path, 'x.gz'), `${url}?encoding=gzip`);
    assert.match(gz.headers, new RegExp(`^content-disposition: attachment; filename="checkout-1-${time}-${record.id}\\.heapsnapshot\\.gz"\\r$`, 'im'));
    assert.match(gz.headers, /^content-type: application\/gzip\r$/im);
    assert.doesNotMatch(gz.headers, /^content-encoding:/im);
    assert.equal(gz.downloaded, gzipped.length);
  });

  void it('curl -C - resumes an interrupted download with identical bytes: the JSON, and the stored .gz', async () => {
    // The JSON: a transfer cut off by the network, a rate limit (the whole would take 8 s) and a 1 s deadline stop curl part way (exit 28).
    const json = join(dir.path, 'resumed.heapsnapshot');
    const cut = await curl('--limit-rate', String(Math.floor(snapshot.length / 8)), '--max-time', '1', '-o', json, url);
    assert.equal(cut.code, 28, `the first transfer was cut off (${cut.downloaded} of ${snapshot.length})`);
    // The .gz: what a cut-off transfer leaves, a prefix of the file (its small size makes a timed cut unreliable).
    const gz = join(dir.path, 'resumed.heapsnapshot.gz');
    await writeFile(gz, gzipped.subarray(0, 3_000_001));
    for (const [out, query, whole] of [
      [json, '', snapshot],
      [gz, '?encoding=gzip', gzipped],
    ] as const) {
      const have = (await stat(out)).size;
      assert.ok(have > 0 && have < whole.length, `${have} of ${whole.length}`);
      assert.ok((await readFile(out)).equals(whole.subarray(0, have)));
      const resumed = await curl('-C', '-', '-o', out, `${url}${query}`);
      assert.equal(resumed.status, 206);
      assert.equal(resumed.downloaded, whole.length - have, 'only the rest was sent');
      assert.match(resumed.headers, new RegExp(`^content-range: bytes ${have}-${whole.length - 1}/${whole.length}\\r$`, 'im'));
      assert.ok((await readFile(out)).equals(whole), `${out}: identical bytes after the resume`);
      console.log(`curl -C - resumed ${out.endsWith('.gz') ? 'the .gz' : 'the JSON'} at byte ${have}: ${resumed.downloaded} more bytes, identical to the stored artifact`);
    }
  });

  void it('a range of the gzip-encoded representation counts in stored bytes; past the end is 416; If-Range with another ETag gets it all', async () => {
    const part = join(dir.path, 'part.bin');
    const encoded = await curl('-H', 'Accept-Encoding: gzip', '-r', '100-1099', '-o', part, url);
    assert.equal(encoded.status, 206);
    assert.match(encoded.headers, /^content-encoding: gzip\r$/im);
    assert.match(encoded.headers, new RegExp(`^content-range: bytes 100-1099/${gzipped.length}\\r$`, 'im'));
    assert.ok((await readFile(part)).equals(gzipped.subarray(100, 1100)));
    const json = await curl('-r', '-500', '-o', part, url);
    assert.equal(json.status, 206);
    assert.ok((await readFile(part)).equals(snapshot.subarray(snapshot.length - 500)));

    const past = await fetch(url, { headers: { authorization: `Bearer ${TOKENS.runbook}`, range: `bytes=${snapshot.length}-` } });
    assert.equal(past.status, 416);
    assert.equal(past.headers.get('content-range'), `bytes */${snapshot.length}`);
    assert.equal(((await past.json()) as { error: { code: string } }).error.code, 'range_not_satisfiable');

    const etag = (await fetch(url, { headers: { authorization: `Bearer ${TOKENS.runbook}`, range: 'bytes=0-0' } })).headers.get('etag');
    assert.match(etag ?? '', /^"[0-9a-f]{32}"$/);
    const same = await fetch(url, { headers: { authorization: `Bearer ${TOKENS.runbook}`, range: 'bytes=0-9', 'if-range': etag! } });
    assert.equal(same.status, 206);
    await same.body?.cancel();
    const stale = await fetch(url, { headers: { authorization: `Bearer ${TOKENS.runbook}`, range: 'bytes=0-9', 'if-range': '"not-this-one"', 'accept-encoding': 'identity' } });
    assert.equal(stale.status, 200);
    assert.ok(Buffer.from(await stale.arrayBuffer()).equals(snapshot));
    await writeFile(part, '');
  });
});
