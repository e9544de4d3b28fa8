/** The filesystem sink against the real filesystem, with a real V8 heap snapshot. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Readable } from 'node:stream';
import { setImmediate as setImmediatePromise, setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { CaptureError } from '@heapcap/errors';
import { sampleManifest } from '@heapcap/testkit';
import { createFileSink } from '../src/fs/sink.ts';
import { CaptureManifestSchema } from '../src/manifest.ts';
import { openFileArtifact } from '../src/fs/read.ts';
import type { ArtifactRef } from '../src/types.ts';

const run = promisify(execFile);

/** CDP delivers the snapshot in chunks of at most 100 KiB. */
const CHUNK = 100 * 1024;

const WRITE_SNAPSHOT = `
const keep = (globalThis.keep = []);
for (let i = 0; i < 30000; i++) keep.push({ id: i, name: 'order-' + i, at: new Date(i), tags: ['a' + (i % 7)] });
require('node:v8').writeHeapSnapshot(process.argv[1]);
`;

let work: string;
let snapPath: string;
let snap: Buffer;

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'heapcap-fs-sink-'));
  snapPath = join(work, 'real.heapsnapshot');
  await run(process.execPath, ['-e', WRITE_SNAPSHOT, snapPath], { timeout: 60_000 });
  snap = await readFile(snapPath);
});

after(async () => {
  await rm(work, { recursive: true, force: true });
});

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

function newRef(overrides: Partial<ArtifactRef> = {}): ArtifactRef {
  return {
    captureId: `cap-${randomUUID()}`,
    targetId: 'checkout-api',
    startedAt: new Date('2026-11-21T10:20:30Z'),
    gzip: true,
    ...overrides,
  };
}

async function newRoot(): Promise<string> {
  return mkdtemp(join(work, 'root-'));
}

/** Every regular file under `dir`, relative to it (including dot files). */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => relative(dir, join(e.parentPath, e.name)));
}

/** The real snapshot in 100 KiB chunks, slowly, calling `onChunk` after each; `onChunk` may end it. */
function slowSnapshot(onChunk: (stream: Readable, sent: number) => Promise<void> | void): Readable {
  let at = 0;
  let sent = 0;
  return new Readable({
    read() {
      // A short pause per chunk, like chunks arriving from a socket, so the
      // writes reach the temp file before the test interferes.
      void sleep(2).then(async () => {
        if (this.destroyed) return;
        if (at >= snap.length) {
          this.push(null);
          return;
        }
        this.push(snap.subarray(at, at + CHUNK));
        at += CHUNK;
        sent++;
        await onChunk(this, sent);
      });
    },
  });
}

async function rejection(p: Promise<unknown>): Promise<CaptureError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof CaptureError, `expected a CaptureError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a rejection');
}

void describe('FileSink.put', () => {
  void it('stores a real snapshot gzipped under its key, atomically, with matching sha256 and header', async () => {
    const root = await newRoot();
    const sink = createFileSink({ dir: root });
    const ref = newRef();
    const stored = await sink.put(ref, createReadStream(snapPath, { highWaterMark: CHUNK }));

    assert.equal(sink.kind, 'file');
    assert.equal(stored.key, `checkout-api/2026/11/21/${ref.captureId}.heapsnapshot.gz`);
    assert.equal(stored.location, join(root, stored.key));
    assert.deepEqual(await filesUnder(root), [stored.key], 'only the final file, no temp file');

    const onDisk = await readFile(stored.location);
    assert.ok(gunzipSync(onDisk).equals(snap), 'gunzips to the same bytes');
    assert.equal(stored.sha256, sha256(snap));
    assert.equal(stored.bytesUncompressed, snap.length);
    assert.equal(stored.bytesStored, onDisk.length);
    assert.ok(stored.bytesStored < snap.length / 3, `compressed ${snap.length} to ${stored.bytesStored}`);
    assert.equal(stored.gzip, true);
    assert.equal(stored.contentType, 'application/json');
    assert.equal((await stat(stored.location)).mode & 0o777, 0o600, 'snapshots are readable by the owner only');

    const full = JSON.parse(snap.toString('utf8')) as { snapshot: { node_count: number; edge_count: number }; nodes: number[]; edges: number[] };
    const h = stored.header;
    assert.ok(h, 'header parsed');
    assert.equal(h.nodeCount, full.snapshot.node_count);
    assert.equal(h.edgeCount, full.snapshot.edge_count);
    assert.equal(full.nodes.length, h.nodeCount * h.nodeFields.length);
    assert.equal(full.edges.length, h.edgeCount * h.edgeFields.length);
  });

  for (const gzip of [false, true]) {
    void it(`gives every chunk to release once its last stage is done with it (gzip ${gzip ? 'on' : 'off'}): a scribbled chunk never reaches the file`, async () => {
      const sink = createFileSink({ dir: await newRoot() });
      const chunks: Buffer[] = [];
      for (let at = 0; at < snap.length; at += CHUNK) chunks.push(Buffer.from(snap.subarray(at, at + CHUNK)));
      const released = new Set<Uint8Array>();
      // The producer refills a block as soon as it is given back: had the write (or gzip) still needed
      // its bytes, the stored artifact would differ from the snapshot.
      const release = (chunk: Uint8Array): void => {
        assert.ok(chunks.includes(chunk as Buffer), 'only the source chunks are given back');
        released.add(chunk);
        chunk.fill(0x21);
      };
      const stored = await sink.put(newRef({ gzip }), Readable.from(chunks), { release });
      const onDisk = await readFile(stored.location);
      assert.ok((gzip ? gunzipSync(onDisk) : onDisk).equals(snap), 'the stored bytes are the snapshot');
      assert.equal(stored.sha256, sha256(snap));
      assert.equal(released.size, chunks.length, 'every chunk was given back');
    });
  }

  void it('writes plain JSON under a .heapsnapshot key when gzip is off', async () => {
    const root = await newRoot();
    const sink = createFileSink({ dir: root });
    const ref = newRef({ gzip: false });
    const stored = await sink.put(ref, createReadStream(snapPath, { highWaterMark: CHUNK }));
    assert.equal(stored.key, `checkout-api/2026/11/21/${ref.captureId}.heapsnapshot`);
    assert.ok((await readFile(stored.location)).equals(snap));
    assert.equal(stored.bytesStored, snap.length);
    assert.equal(stored.gzip, false);
    assert.equal(stored.sha256, sha256(snap));
  });

  void it('rethrows the source error as it is (target_closed) and leaves no file and no temp file', async () => {
    const root = await newRoot();
    const sink = createFileSink({ dir: root });
    const closed = new CaptureError('target_closed', 'the target went away mid-snapshot');
    let tempSeen: string[] = [];
    const source = slowSnapshot(async (stream, sent) => {
      if (sent !== 10) return;
      // Mid-stream the tree holds only the partial temp file (nothing under the final key),
      // and the cleanup is what removes it.
      tempSeen = await filesUnder(root);
      stream.destroy(closed);
    });
    const err = await rejection(sink.put(newRef(), source));
    assert.equal(err, closed, 'the very same error');
    assert.equal(err.code, 'target_closed');
    assert.equal(tempSeen.length, 1, `only one temp file while streaming, saw ${JSON.stringify(tempSeen)}`);
    assert.match(tempSeen[0]!, /\/\.cap-[\w-]+\.[0-9a-f]+\.tmp$/, 'dot-prefixed temp file in the final directory');
    assert.deepEqual(await filesUnder(root), []);
  });

  void it('reports an untyped source failure as internal, not as a storage failure', async () => {
    const root = await newRoot();
    const source = slowSnapshot((stream, sent) => {
      if (sent === 3) stream.destroy(new Error('spill file vanished'));
    });
    const err = await rejection(createFileSink({ dir: root }).put(newRef(), source));
    assert.equal(err.code, 'internal');
    assert.match(err.message, /spill file vanished/);
    assert.deepEqual(await filesUnder(root), []);
  });

  void it('rejects with cancelled when aborted mid-stream, leaves nothing and destroys the source', async () => {
    const root = await newRoot();
    const sink = createFileSink({ dir: root });
    const ac = new AbortController();
    let tempSeen = 0;
    const source = slowSnapshot(async (_stream, sent) => {
      if (sent !== 10) return;
      tempSeen = (await filesUnder(root)).filter((f) => f.endsWith('.tmp')).length;
      ac.abort(new Error('operator pressed cancel'));
    });
    const err = await rejection(sink.put(newRef(), source, { signal: ac.signal }));
    assert.equal(err.code, 'cancelled');
    assert.match(err.message, /operator pressed cancel/);
    assert.equal(tempSeen, 1, 'a partial temp file existed when the abort came');
    assert.ok(source.destroyed, 'the source was destroyed');
    assert.deepEqual(await filesUnder(root), []);
  });

  void it('rejects with cancelled before touching the disk when the signal already fired', async () => {
    const root = await newRoot();
    const source = createReadStream(snapPath);
    const err = await rejection(createFileSink({ dir: root }).put(newRef(), source, { signal: AbortSignal.abort() }));
    assert.equal(err.code, 'cancelled');
    assert.deepEqual(await readdir(root), []);
  });

  void it('rejects ids that would escape the root with invalid_input', async () => {
    const root = await newRoot();
    const sink = createFileSink({ dir: root });
    const err = await rejection(sink.put(newRef({ targetId: '../../etc' }), Readable.from([Buffer.from('{}')])));
    assert.equal(err.code, 'invalid_input');
    assert.deepEqual(await readdir(root), []);
  });
});

void describe('FileSink on an unwritable root', () => {
  // A path under a regular file: mkdir fails with ENOTDIR even for root (mode bits would not stop root).
  let root: string;
  before(async () => {
    const file = join(work, `not-a-dir-${randomUUID()}`);
    await writeFile(file, 'x');
    root = join(file, 'sub');
  });

  void it('check() fails with storage_failed naming the path and errno, with a hint', async () => {
    const err = await rejection(createFileSink({ dir: root }).check());
    assert.equal(err.code, 'storage_failed');
    assert.ok(err.message.includes(root), err.message);
    assert.match(err.message, /ENOTDIR/);
    assert.equal(err.details?.['errno'], 'ENOTDIR');
    assert.ok(err.hint?.includes(root), `hint: ${err.hint}`);
  });

  void it('put() fails with storage_failed and destroys the source', async () => {
    const source = createReadStream(snapPath, { highWaterMark: CHUNK });
    const err = await rejection(createFileSink({ dir: root }).put(newRef(), source));
    assert.equal(err.code, 'storage_failed');
    assert.match(err.message, /ENOTDIR/);
    assert.ok(source.destroyed);
  });

  void it('putManifest() fails with storage_failed', async () => {
    const ref = newRef();
    const stored = { key: 'k', location: 'l', bytesUncompressed: 1, bytesStored: 1, sha256: '0'.repeat(64), gzip: true, contentType: 'application/json', header: null };
    const err = await rejection(createFileSink({ dir: root }).putManifest(ref, sampleManifest(ref, stored)));
    assert.equal(err.code, 'storage_failed');
  });
});

void describe('FileSink on a full disk', () => {
  // A 1 MiB tmpfs: writing the multi-MB snapshot uncompressed hits a real ENOSPC.
  // Needs root (the project's test machine runs as root).
  let mnt: string;
  before(async () => {
    mnt = await mkdtemp(join(work, 'tmpfs-'));
    await run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt], { timeout: 10_000 });
  });
  after(async () => {
    await run('umount', [mnt], { timeout: 10_000 });
  });

  void it('check() passes, then put() fails with storage_failed (ENOSPC) and frees the space', async () => {
    const sink = createFileSink({ dir: join(mnt, 'captures') });
    await sink.check();
    assert.ok(snap.length > 2 * 1024 * 1024, 'the snapshot is larger than the volume');
    const err = await rejection(sink.put(newRef({ gzip: false }), createReadStream(snapPath, { highWaterMark: CHUNK })));
    assert.equal(err.code, 'storage_failed');
    assert.match(err.message, /ENOSPC/);
    assert.match(err.hint ?? '', /free space/);
    assert.deepEqual(await filesUnder(mnt), [], 'the partial temp file was removed');
  });
});

void describe('FileSink.check', () => {
  void it('creates the root and leaves no probe behind', async () => {
    const root = join(await newRoot(), 'a', 'b');
    await createFileSink({ dir: root }).check();
    assert.ok((await stat(root)).isDirectory());
    assert.deepEqual(await readdir(root), []);
  });

  void it('rejects with cancelled when the signal already fired', async () => {
    const err = await rejection(createFileSink({ dir: await newRoot() }).check(AbortSignal.abort()));
    assert.equal(err.code, 'cancelled');
  });
});

void describe('manifest, read-back and remove', () => {
  void it('writes a manifest that parses with CaptureManifestSchema, reads the artifact back, then removes everything', async () => {
    const root = await newRoot();
    const sink = createFileSink({ dir: root });
    const ref = newRef();
    const stored = await sink.put(ref, createReadStream(snapPath, { highWaterMark: CHUNK }));
    // A complete manifest plus a key this schema version does not know.
    const manifest = { ...sampleManifest(ref, stored), extra: { chunks: 12 } };
    const parsed = CaptureManifestSchema.parse(manifest);
    assert.deepEqual((parsed as Record<string, unknown>)['extra'], { chunks: 12 }, 'unknown keys survive (loose)');

    const { key, location } = await sink.putManifest(ref, parsed);
    assert.equal(key, `checkout-api/2026/11/21/${ref.captureId}.manifest.json`);
    assert.equal(location, join(root, key), 'what the CLI prints');
    const text = await readFile(join(root, key), 'utf8');
    assert.equal(text, `${JSON.stringify(parsed, null, 2)}\n`, 'pretty JSON, 2 spaces');
    assert.deepEqual(CaptureManifestSchema.parse(JSON.parse(text)), parsed);

    // Read back through the sink: stored bytes, and gunzipped on the fly.
    const gz = await streamBytes(await sink.open(stored.key));
    assert.ok(gz.equals(await readFile(stored.location)));
    const plain = await streamBytes(await openFileArtifact(stored.location, { decompress: true }));
    assert.equal(sha256(plain), stored.sha256);

    // A temp file a crashed put left behind is removed too.
    const dir = join(root, 'checkout-api/2026/11/21');
    await writeFile(join(dir, `.${ref.captureId}.deadbeef.tmp`), 'partial');
    await sink.remove(ref);
    assert.deepEqual(await filesUnder(root), []);
    await sink.remove(ref); // already gone: fine
    await sink.remove(newRef({ startedAt: new Date('2020-01-01T00:00:00Z') })); // directory never existed: fine
  });

  void it('rejects an invalid manifest (bad sha256, missing timings)', () => {
    const result = CaptureManifestSchema.safeParse({ schemaVersion: 1, captureId: 'x', artifact: { sha256: 'nope' } });
    assert.equal(result.success, false);
  });

  void it('openFileArtifact on a missing file rejects with storage_failed', async () => {
    const path = join(await newRoot(), 'missing.heapsnapshot.gz');
    const err = await rejection(openFileArtifact(path));
    assert.equal(err.code, 'storage_failed');
    assert.match(err.message, /ENOENT/);
  });

  void it('openArtifact refuses keys that climb out of the root', async () => {
    const err = await rejection(createFileSink({ dir: await newRoot() }).open('../../etc/passwd'));
    assert.equal(err.code, 'invalid_input');
  });

  void it('removes a plain (non-gzip) snapshot too', async () => {
    const root = await newRoot();
    const sink = createFileSink({ dir: root });
    const ref = newRef({ gzip: false });
    await mkdir(join(root, 'checkout-api/2026/11/21'), { recursive: true });
    await sink.put(ref, Readable.from([Buffer.from('{"snapshot":{}}')]));
    assert.equal((await filesUnder(root)).length, 1);
    await sink.remove({ ...ref, gzip: true }); // the ref's gzip flag does not matter for removal
    assert.deepEqual(await filesUnder(root), []);
  });
});

void describe('FileSink directories after a failure', () => {
  /** A source that fails on its first read, as a snapshot whose target died at once. */
  const failing = (): Readable =>
    new Readable({
      read() {
        this.destroy(new CaptureError('target_closed', 'gone'));
      },
    });

  void it('a failed put removes the <target>/YYYY/MM/DD directories it created, and keeps the root', async () => {
    const root = await newRoot();
    const err = await rejection(createFileSink({ dir: root }).put(newRef(), failing()));
    assert.equal(err.code, 'target_closed');
    assert.deepEqual(await readdir(root), [], 'no empty directories left');
    // Directories that were there before the attempt stay.
    await mkdir(join(root, 'checkout-api/2026'), { recursive: true });
    await rejection(createFileSink({ dir: root }).put(newRef(), failing()));
    assert.deepEqual(await readdir(join(root, 'checkout-api')), ['2026'], 'only what the attempt created is removed');
    assert.deepEqual(await readdir(join(root, 'checkout-api/2026')), []);
  });

  void it('a failed put keeps a directory another capture is writing into, and that capture completes', async () => {
    const root = await newRoot();
    const sink = createFileSink({ dir: root });
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let streaming!: () => void;
    const midStream = new Promise<void>((r) => (streaming = r));
    const slow = slowSnapshot(async (_stream, sent) => {
      if (sent !== 3) return;
      streaming();
      await released;
    });
    const ok = newRef();
    const writing = sink.put(ok, slow);
    await midStream;
    // The slow capture's temp file is in the directory; the failed one must not take the directory away.
    const err = await rejection(sink.put(newRef(), failing()));
    assert.equal(err.code, 'target_closed');
    release();
    const stored = await writing;
    assert.deepEqual(await filesUnder(root), [stored.key]);
  });

  void it('a capture racing a failed one into a new directory completes (it recreates what the failure pruned)', async () => {
    // The window is between the writer's mkdir and its open: a failed capture
    // that prunes the directory right then must not fail the writer. Starting
    // the writer 0-6 event-loop turns after the failure sweeps across that
    // window; without the retry about a third of the rounds failed with ENOENT.
    for (let round = 0; round < 100; round++) {
      const root = await newRoot();
      const sink = createFileSink({ dir: root });
      const good = newRef();
      const [written, failed] = await Promise.allSettled([
        (async () => {
          for (let i = 0; i < round % 7; i++) await setImmediatePromise();
          return sink.put(good, Readable.from([Buffer.from('{"snapshot":{}}')]));
        })(),
        sink.put(newRef(), failing()),
      ]);
      assert.equal(failed.status, 'rejected');
      assert.equal(written.status, 'fulfilled', `round ${round}: ${written.status === 'rejected' ? String(written.reason) : ''}`);
      assert.equal((await filesUnder(root)).length, 1, `round ${round}`);
    }
  });

  void it('remove() also removes the directories it leaves empty', async () => {
    const root = await newRoot();
    const sink = createFileSink({ dir: root });
    const a = newRef();
    const b = newRef();
    await sink.put(a, Readable.from([Buffer.from('{"snapshot":{}}')]));
    await sink.put(b, Readable.from([Buffer.from('{"snapshot":{}}')]));
    await sink.remove(a);
    assert.equal((await filesUnder(root)).length, 1, 'the other capture stays, with its directory');
    await sink.remove(b);
    assert.deepEqual(await readdir(root), []);
  });
});

async function streamBytes(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(c as Buffer);
  return Buffer.concat(parts);
}
