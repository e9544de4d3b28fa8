/**
 * SnapshotStream without a target: byte order across memory → spill → memory
 * transitions with a tiny ceiling and a slow reader, and what it leaves on disk.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir, readlink } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { after, before, describe, test } from 'node:test';
import { tmpDir, waitFor, type TmpDir } from '@heapcap/testkit';
import { SnapshotStream } from '../src/index.ts';

/** ~100 KB like a CDP chunk, with 2- and 3-byte UTF-8 characters so bytes ≠ characters; every chunk has the same byte length. */
function chunkText(i: number): string {
  return `<${String(i).padStart(6, '0')}|${'aé€'.repeat(16_666)}>`;
}
const CHUNK_BYTES = Buffer.byteLength(chunkText(0));
const CEILING = 3 * CHUNK_BYTES;

/** Open spill files of this process (unlinked at creation, so only visible as fds). */
async function openSpillFiles(): Promise<string[]> {
  const fds = await readdir('/proc/self/fd');
  const paths = await Promise.all(fds.map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')));
  return paths.filter((p) => p.includes('heapcap-spill'));
}

/** A consumer at ~20 MB/s (5 ms per 100 KB chunk) that holds its first chunk until `gate` resolves. */
function slowSink(received: Buffer[], gate: Promise<void> = Promise.resolve()): Writable {
  return new Writable({
    highWaterMark: CHUNK_BYTES,
    write(chunk: Buffer, _enc, done) {
      received.push(chunk);
      if (received.length === 1) void gate.then(() => done());
      else setTimeout(done, 5);
    },
  });
}

void describe('SnapshotStream', { timeout: 60_000 }, () => {
  let spill: TmpDir;
  before(async () => {
    spill = await tmpDir('heapcap-stream-spill');
  });
  after(async () => {
    await spill?.cleanup();
  });

  void test('keeps byte order across memory → spill → memory → spill', async (t) => {
    const stream = new SnapshotStream({ memoryCeilingBytes: CEILING, spillDir: spill.path });
    // A failed assertion must not leave the spill fd open for the next test.
    t.after(() => stream.destroy());
    const sent: string[] = [];
    const push = (n: number): void => {
      for (let k = 0; k < n; k++) {
        const text = chunkText(sent.length);
        sent.push(text);
        stream.pushChunk(text);
      }
    };
    const spilled = (): number => stream.stats.spilledBytes;

    // No reader yet. Up to the ceiling, chunks stay in memory…
    push(3);
    assert.equal(spilled(), 0, 'within the ceiling: memory');
    // …beyond it they go to the spill file, which is never visible in the directory.
    // 15 chunks: more than the Readable's own 1 MiB buffer takes in one go.
    push(15);
    assert.equal(spilled(), 15 * CHUNK_BYTES, 'beyond the ceiling: spill');
    await waitFor(async () => (await openSpillFiles()).length === 1, { timeoutMs: 5_000, what: 'the spill file to be open' });
    assert.deepEqual(await readdir(spill.path), [], 'the spill file is unlinked at once');

    // A slow reader starts and empties memory first. Until it has read
    // everything spilled, new chunks must queue behind the spilled ones, i.e.
    // in the spill file, although memory has room again.
    // The reader holds its first chunk, so the Readable's buffer fills and part of the spill is still unread.
    const received: Buffer[] = [];
    let release!: () => void;
    const consumed = pipeline(stream, slowSink(received, new Promise<void>((r) => (release = r))));
    await waitFor(() => received.length === 1 && stream.readableLength >= stream.readableHighWaterMark, {
      timeoutMs: 5_000,
      intervalMs: 1,
      what: 'the reader to start and the Readable buffer to fill',
    });
    assert.ok(stream.readableLength + CHUNK_BYTES < sent.length * CHUNK_BYTES, 'part of the spill file is still unread');
    push(4);
    assert.equal(spilled(), 19 * CHUNK_BYTES, 'while draining the spill file: still spill');
    release();

    // Once the reader has caught up, memory is used again.
    const bytesSoFar = (): number => received.reduce((n, b) => n + b.length, 0);
    await waitFor(() => bytesSoFar() === sent.length * CHUNK_BYTES, { timeoutMs: 20_000, what: 'the reader to catch up' });
    await new Promise((r) => setImmediate(r));
    push(2);
    assert.equal(spilled(), 19 * CHUNK_BYTES, 'caught up: memory again');

    // A burst faster than the reader: the Readable's buffer (1 MiB), then the ceiling, then the spill file again.
    push(30);
    assert.ok(spilled() > 19 * CHUNK_BYTES, `a second spill (${spilled()} bytes spilled in all)`);
    // And chunks that trickle in while that spill drains.
    for (let k = 0; k < 20; k++) {
      await new Promise((r) => setTimeout(r, 3));
      push(1);
    }
    stream.finish();
    await consumed;

    const expected = Buffer.from(sent.join(''), 'utf8');
    const actual = Buffer.concat(received);
    assert.equal(actual.length, expected.length, 'byte count');
    assert.ok(actual.equals(expected), 'byte-exact, in order');
    assert.equal(stream.stats.bytes, expected.length);
    assert.equal(stream.stats.chunks, sent.length);
    assert.ok(stream.stats.peakMemoryBytes <= CEILING, `memory stayed within the ceiling (${stream.stats.peakMemoryBytes})`);
    await waitFor(async () => (await openSpillFiles()).length === 0, { timeoutMs: 5_000, what: 'the spill file to be closed' });
  });

  void test('destroy() mid-spill fails the reader and closes the spill file', async () => {
    const stream = new SnapshotStream({ memoryCeilingBytes: CHUNK_BYTES, spillDir: spill.path });
    for (let i = 0; i < 10; i++) stream.pushChunk(chunkText(i));
    assert.ok(stream.stats.spilledBytes > 0);
    const received: Buffer[] = [];
    const consumed = pipeline(stream, slowSink(received));
    stream.destroy(new Error('target went away'));
    await assert.rejects(consumed, /target went away/);
    await waitFor(async () => (await openSpillFiles()).length === 0, { timeoutMs: 5_000, what: 'the spill file to be closed' });
    assert.deepEqual(await readdir(spill.path), []);
  });

  void test('reuses its blocks once the consumer gives them back: a few dozen for 48 MiB, bytes identical', async (t) => {
    const MiB = 1024 * 1024;
    const stream = new SnapshotStream({ memoryCeilingBytes: 4 * MiB, spillDir: spill.path });
    t.after(() => stream.destroy());
    const got = createHash('sha256');
    // The consumer takes nothing more until every chunk is in: it falls behind by 44 MiB on any machine,
    // so the spill runs, and the blocks are given back and reused while it catches up.
    let allPushed!: () => void;
    const pushed = new Promise<void>((resolve) => (allPushed = resolve));
    const consumed = pipeline(
      stream,
      new Writable({
        write(chunk: Buffer, _enc, done) {
          got.update(chunk);
          // Given back twice, through the stream's `release` (what a store gets in its put options):
          // the block must still be reused only once.
          stream.release(chunk);
          stream.release(chunk);
          void pushed.then(() => setImmediate(done));
        },
      }),
    );
    // The producer reuses one buffer, as the pipe transport does: the stream must copy.
    const sent = createHash('sha256');
    const scratch = Buffer.alloc(64 * 1024);
    for (let i = 0; i < 768; i++) {
      scratch.fill(i % 251);
      scratch.writeUInt32BE(i, 0);
      sent.update(scratch);
      stream.pushChunk(scratch);
      if (i % 16 === 0) await new Promise((r) => setImmediate(r));
    }
    allPushed();
    stream.finish();
    await consumed;
    assert.equal(got.digest('hex'), sent.digest('hex'), 'byte-exact, in order');
    assert.ok(stream.stats.spilledBytes > 40 * MiB, `the consumer fell behind (spilled ${stream.stats.spilledBytes} bytes)`);
    t.diagnostic(`blocks allocated ${stream.blocksAllocated}, spilled ${stream.stats.spilledBytes} bytes, peak memory ${stream.stats.peakMemoryBytes} bytes`);
    // 4 blocks of memory, the spill's staging block and the reads, what the pipeline holds.
    assert.ok(stream.blocksAllocated <= 16, `${stream.blocksAllocated} blocks allocated for 48 MiB`);
  });
});
