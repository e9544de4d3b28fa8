/**
 * The streaming summary is the same whatever the chunking: one buffer, 1-byte
 * chunks, random sizes, cuts inside every multi-byte UTF-8 sequence and after
 * every backslash, through a Writable in stream.pipeline, and from a gzipped file.
 */
import assert from 'node:assert/strict';
import { createReadStream } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { gzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { tmpDir, type NodeTarget, type TmpDir } from '@heapcap/testkit';
import { createSummarizer, summarizeFile, SummarySchema, SummaryTee, SummaryWritable, type Summary } from '../src/index.ts';
import { Readable, Writable } from 'node:stream';
import { createHash } from 'node:crypto';
import { random, splitAt, startLeakTarget, writeSnapshot } from './helpers.ts';

const OPTIONS = { largestStrings: 3 };

function summarize(chunks: Buffer[]): Summary {
  const s = createSummarizer(OPTIONS);
  for (const c of chunks) s.write(c);
  return s.end();
}

/** The snapshot with every \\uXXXX escape of a non-ASCII BMP character (outside surrogates) replaced by its raw UTF-8. */
function rawUtf8(ascii: Buffer): Buffer {
  const text = ascii.toString('latin1').replace(/\\(u[0-9a-fA-F]{4}|[^u])/g, (all: string, esc: string) => {
    if (!esc.startsWith('u') || esc.length !== 5) return all;
    const code = parseInt(esc.slice(1), 16);
    if (code < 0x80 || (code >= 0xd800 && code <= 0xdfff) || code === 0x2028 || code === 0x2029) return all;
    return Buffer.from(String.fromCharCode(code), 'utf8').toString('latin1');
  });
  return Buffer.from(text, 'latin1');
}

void describe('streaming summary', { timeout: 300_000 }, () => {
  let work: TmpDir;
  let target: NodeTarget;
  let bytes: Buffer;
  let whole: Summary;

  before(async () => {
    work = await tmpDir('heapcap-summary-chunks');
    target = await startLeakTarget();
    const file = await writeSnapshot(target, join(work.path, 'leak-target.heapsnapshot'));
    bytes = await readFile(file);
    whole = summarize([bytes]);
  });
  after(async () => {
    await target?.kill();
    await work?.cleanup();
  });

  void test('the summary of a real snapshot: schema, totals, the fixture classes, a decoded string', () => {
    SummarySchema.parse(whole);
    const parsed = JSON.parse(bytes.toString('utf8')) as { snapshot: { node_count: number; edge_count: number } };
    assert.equal(whole.nodeCount, parsed.snapshot.node_count);
    assert.equal(whole.edgeCount, parsed.snapshot.edge_count);
    assert.equal(whole.snapshotBytes, bytes.length);
    assert.equal(whole.classes.reduce((s, c) => s + c.count, 0), whole.nodeCount, 'every node is in one class');
    assert.equal(whole.classes.reduce((s, c) => s + c.selfSize, 0), whole.totalSelfSize);
    assert.equal(whole.classes.find((c) => c.name === 'Größe漢字')?.count, 7, 'a class name of multi-byte UTF-8');
    const text = whole.largestStrings?.[0];
    assert.ok(text !== undefined, 'largestStrings asked for');
    assert.equal(text.preview, 'He said "hi" \\ back, größe 漢字 '.repeat(10).slice(0, 200), 'escapes and UTF-8 decoded');
    assert.equal(text.length, 1024, 'V8 records at most 1024 characters of a string');
  });

  void test('no strings are decoded unless asked: the default summary has no largestStrings', () => {
    const s = createSummarizer();
    s.write(bytes);
    assert.equal(s.end().largestStrings, undefined);
  });

  void test('1-byte chunks', () => {
    const chunks: Buffer[] = [];
    for (let i = 0; i < bytes.length; i++) chunks.push(bytes.subarray(i, i + 1));
    assert.deepEqual(summarize(chunks), whole);
  });

  void test('random chunk sizes (20 seeds, up to 64 KiB and up to 16 bytes)', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const next = random(seed);
      const max = seed % 2 === 0 ? 65_536 : 16;
      const cuts: number[] = [];
      for (let at = 0; at < bytes.length; ) cuts.push((at += 1 + Math.floor(next() * max)));
      assert.deepEqual(summarize(splitAt(bytes, cuts)), whole, `seed ${seed}`);
    }
  });

  void test('cuts after every backslash (inside escapes)', () => {
    const escapes: number[] = [];
    for (let i = 0; i < bytes.length; i++) if (bytes[i] === 0x5c) escapes.push(i + 1, i + 3);
    assert.ok(escapes.length > 100, `the snapshot has escapes (${escapes.length / 2})`);
    assert.deepEqual(summarize(splitAt(bytes, escapes)), whole);
  });

  void test('raw UTF-8 (as other tools re-save snapshots): cuts inside every multi-byte sequence', () => {
    // V8 itself writes pure ASCII (\u escapes for everything else, measured on
    // Node 20, 22 and Chromium 156); a snapshot saved by another tool may
    // carry raw UTF-8 instead. Same content, so the same summary.
    const utf8 = rawUtf8(bytes);
    const inside: number[] = [];
    for (let i = 0; i < utf8.length; i++) {
      const b = utf8[i] as number;
      if (b >= 0x80 && b < 0xc0) inside.push(i); // a continuation byte: the cut falls inside a sequence
    }
    assert.ok(inside.length > 20, `raw UTF-8 sequences present (${inside.length} continuation bytes)`);
    const expected = { ...whole, snapshotBytes: utf8.length };
    assert.deepEqual(summarize([utf8]), expected);
    assert.deepEqual(summarize(splitAt(utf8, inside)), expected);
  });

  void test('as a Writable in stream.pipeline, and from a gzipped file', async () => {
    const file = join(work.path, 'leak-target.heapsnapshot');
    const sink = new SummaryWritable(OPTIONS);
    await pipeline(createReadStream(file, { highWaterMark: 4096 }), sink);
    assert.deepEqual(sink.summary, whole);
    const gz = join(work.path, 'leak-target.heapsnapshot.gz');
    await writeFile(gz, gzipSync(bytes));
    assert.deepEqual(await summarizeFile(gz, OPTIONS), whole);
  });

  void test('SummaryTee passes every byte through unchanged; a bad snapshot fails the summary, never the pipeline', async () => {
    const through = async (input: Buffer): Promise<{ tee: SummaryTee; sha: string }> => {
      const tee = new SummaryTee(OPTIONS);
      const hash = createHash('sha256');
      const sink = new Writable({
        write(chunk: Buffer, _enc, cb): void {
          hash.update(chunk);
          cb();
        },
      });
      const pieces = splitAt(input, Array.from({ length: 50 }, (_, i) => Math.floor(((i + 1) * input.length) / 51)));
      await pipeline(Readable.from(pieces), tee, sink);
      return { tee, sha: hash.digest('hex') };
    };
    const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
    const good = await through(bytes);
    assert.equal(good.sha, sha(bytes));
    assert.deepEqual(good.tee.outcome, { ok: true, summary: whole });
    const broken = Buffer.from(bytes);
    broken[Math.floor(bytes.length / 3)] = 0x01;
    const bad = await through(broken);
    assert.equal(bad.sha, sha(broken), 'the artifact gets every byte anyway');
    assert.equal(bad.tee.outcome.ok, false);
    assert.equal(!bad.tee.outcome.ok && bad.tee.outcome.error.code, 'snapshot_invalid');
  });
});
