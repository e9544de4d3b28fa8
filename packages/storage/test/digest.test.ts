/** SnapshotDigest and parseSnapshotHeader against a real V8 heap snapshot. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parseSnapshotHeader, SnapshotDigest } from '../src/digest.ts';

const run = promisify(execFile);

// A real snapshot of a process holding a few MB of objects, with non-ASCII
// strings so multi-byte characters straddle chunk boundaries.
const WRITE_SNAPSHOT = `
const keep = (globalThis.keep = []);
for (let i = 0; i < 20000; i++) keep.push({ id: i, name: 'naïve-日本-' + i, tags: ['a' + (i % 7)] });
require('node:v8').writeHeapSnapshot(process.argv[1]);
`;

interface FullSnapshot {
  snapshot: { meta: { node_fields: string[]; edge_fields: string[] }; node_count: number; edge_count: number };
  nodes: number[];
  edges: number[];
}

let dir: string;
let bytes: Buffer;
let full: FullSnapshot;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'heapcap-digest-'));
  const path = join(dir, 'real.heapsnapshot');
  await run(process.execPath, ['-e', WRITE_SNAPSHOT, path], { timeout: 60_000 });
  bytes = await readFile(path);
  full = JSON.parse(bytes.toString('utf8')) as FullSnapshot;
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Streams `data` in chunks of `size` bytes through a SnapshotDigest and returns it once finished. */
async function digestOf(data: Buffer, size: number): Promise<SnapshotDigest> {
  const chunks: Buffer[] = [];
  for (let at = 0; at < data.length; at += size) chunks.push(data.subarray(at, at + size));
  const digest = new SnapshotDigest();
  let passed = 0;
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      passed += chunk.length;
      cb();
    },
  });
  await pipeline(Readable.from(chunks), digest, sink);
  assert.equal(passed, data.length, 'the digest passes every byte through');
  return digest;
}

void describe('parseSnapshotHeader', () => {
  void it('reads counts and fields from the beginning of a real snapshot', () => {
    const header = parseSnapshotHeader(bytes.subarray(0, 64 * 1024).toString('utf8'));
    assert.ok(header, 'header parsed');
    assert.equal(header.nodeCount, full.snapshot.node_count);
    assert.equal(header.edgeCount, full.snapshot.edge_count);
    assert.deepEqual(header.nodeFields, full.snapshot.meta.node_fields);
    assert.deepEqual(header.edgeFields, full.snapshot.meta.edge_fields);
    assert.ok(header.nodeCount > 20000, `expected the held objects in the snapshot, got ${header.nodeCount} nodes`);
    // The header's counts describe the arrays that follow it.
    assert.equal(full.nodes.length, header.nodeCount * header.nodeFields.length);
    assert.equal(full.edges.length, header.edgeCount * header.edgeFields.length);
  });

  void it('says "too short to tell" (undefined) for a prefix that ends before "nodes"', () => {
    const text = bytes.toString('utf8');
    const nodesAt = text.indexOf('"nodes"');
    assert.ok(nodesAt > 0);
    assert.equal(parseSnapshotHeader(text.slice(0, nodesAt - 5)), undefined);
    assert.equal(parseSnapshotHeader(''), undefined);
  });

  void it('returns null for garbage that has a "nodes" key but no valid header', () => {
    assert.equal(parseSnapshotHeader('<html>oops</html>,"nodes":['), null);
    assert.equal(parseSnapshotHeader('{"snapshot":{"node_count":"many","edge_count":1},"nodes":['), null);
    assert.equal(parseSnapshotHeader('{"something":{"node_count":1,"edge_count":1},"nodes":['), null);
  });

  void it('returns undefined for garbage without any "nodes" key', () => {
    assert.equal(parseSnapshotHeader('\u0000\u0001 binary garbage {"a":1}'), undefined);
  });
});

void describe('SnapshotDigest', () => {
  const sha = (): string => createHash('sha256').update(bytes).digest('hex');

  void it('hashes, counts and parses the header of a real snapshot in 100 KiB chunks', async () => {
    const d = await digestOf(bytes, 100 * 1024);
    assert.equal(d.sha256, sha());
    assert.equal(d.bytes, bytes.length);
    assert.equal(d.header?.nodeCount, full.snapshot.node_count);
    assert.equal(d.header?.edgeCount, full.snapshot.edge_count);
  });

  void it('finds the header when it arrives in 7-byte chunks', async () => {
    // Only the first 512 KiB: 7-byte chunks of the whole file would take long for nothing.
    const head = bytes.subarray(0, 512 * 1024);
    const d = await digestOf(head, 7);
    assert.equal(d.header?.nodeCount, full.snapshot.node_count);
    assert.equal(d.sha256, createHash('sha256').update(head).digest('hex'));
  });

  void it('reports a null header (and still hashes) when the stream is not a snapshot', async () => {
    const garbage = Buffer.alloc(300 * 1024, 'x');
    const d = await digestOf(garbage, 64 * 1024);
    assert.equal(d.header, null);
    assert.equal(d.bytes, garbage.length);
    assert.equal(d.sha256, createHash('sha256').update(garbage).digest('hex'));
  });

  void it('stays linear when garbage arrives in tiny chunks (no re-parse of the whole head per chunk)', async () => {
    // 300 KiB in 7-byte chunks: re-parsing the accumulated head on every chunk
    // copies ~6 GB (minutes); with doubling it is a few ms.
    const garbage = Buffer.alloc(300 * 1024, 'y');
    const t0 = performance.now();
    const d = await digestOf(garbage, 7);
    const ms = performance.now() - t0;
    assert.equal(d.header, null);
    assert.ok(ms < 5000, `took ${Math.round(ms)} ms`);
  });

  void it('reports a null header for a short stream that ends before "nodes"', async () => {
    const d = await digestOf(bytes.subarray(0, 200), 50);
    assert.equal(d.header, null);
  });
});
