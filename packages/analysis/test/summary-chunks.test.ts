/**
 * The streaming summary is the same whatever the chunking: one buffer, 1-byte
 * chunks, random sizes, cuts inside every multi-byte UTF-8 sequence and after
 * every backslash, through a Writable in stream.pipeline, and from a gzipped file.
 * The scanner's fast paths (numbers in V8's layout, strings skipped with
 * indexOf, skipped arrays) on a small hand-written snapshot: cut in two at
 * every byte, in V8's layout and with other whitespace.
 */
import assert from 'node:assert/strict';
import { createReadStream } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { gzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { tmpDir, type NodeTarget, type TmpDir } from '@heapcap/testkit';
import { isCaptureError } from '@heapcap/errors';
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

/** The header of a Node 20 snapshot (node and edge fields as V8 writes them). */
const META = {
  node_fields: ['type', 'name', 'id', 'self_size', 'edge_count', 'trace_node_id', 'detachedness'],
  node_types: [['hidden', 'array', 'string', 'object', 'code', 'closure', 'regexp', 'number', 'native', 'synthetic', 'concatenated string', 'sliced string', 'symbol', 'bigint', 'object shape'], 'string', 'number', 'number', 'number', 'number', 'number'],
  edge_fields: ['type', 'name_or_index', 'to_node'],
  edge_types: [['context', 'element', 'property', 'internal', 'hidden', 'shortcut', 'weak'], 'string_or_number', 'node'],
  location_fields: ['object_index', 'script_id', 'line', 'column'],
};
// Node types used below.
const OBJECT = 3;
const NATIVE = 8;
const STRING = 2;
const SYNTHETIC = 9;

/**
 * A small snapshot whose strings table has the cases the skipping fast path
 * must get right: runs of backslashes before a closing quote (even: the quote
 * closes; odd: it is escaped), a string of backslashes only, escaped quotes,
 * raw UTF-8, and wanted class names (decoded) between skipped strings.
 * `sep` is what goes between numbers after each node/edge line (V8: "\n,").
 */
function handMade(sep: { line: string; value: string; string: string }): { bytes: Buffer; strings: string[] } {
  const strings = [
    '<dummy>',
    'ends in a backslash \\', // JSON "…\\\\": an even run before the closing quote
    '"', // JSON "\\"": only an escaped quote
    'Quote"Back\\slash', // a wanted class name with escapes, after skipped strings
    '\\\\\\', // three backslashes: a run of six in the JSON
    'x\\"y\\\\"z', // a backslash before an escaped quote: odd runs inside
    'Plain',
    '<div id="a\\b">', // a wanted native (DOM) name: grouped by tag
    'größe 漢字 "q"',
    '\\'.repeat(33) + '"',
    'last',
  ];
  // type, name, id, self_size, edge_count, trace_node_id, detachedness
  const nodes = [
    [SYNTHETIC, 0, 1, 0, 3, 0, 0],
    [OBJECT, 3, 3, 40, 1, 0, 0],
    [OBJECT, 3, 5, 1_234_567, 0, 0, 0],
    [OBJECT, 6, 7, 16, 1, 0, 0],
    [NATIVE, 7, 9, 100, 0, 0, 2],
    [STRING, 9, 11, 48, 0, 0, 0],
    [STRING, 5, 13, 24, 0, 0, 0],
  ];
  const edges = [
    [2, 1, 7],
    [2, 2, 14],
    [3, 4, 21],
    [2, 5, 28],
    [1, 0, 35],
  ];
  const numbers = (rows: number[][]): string => rows.map((r) => r.join(sep.value)).join(sep.line);
  const text =
    `{"snapshot":{"meta":${JSON.stringify(META)},"node_count":${nodes.length},"edge_count":${edges.length}},\n` +
    `"nodes":[${numbers(nodes)}],\n"edges":[${numbers(edges)}],\n"locations":[${numbers([[1, 2, 3, 4], [5, 6, 7, 8]])}],\n` +
    `"strings":[${strings.map((t) => JSON.stringify(t)).join(sep.string)}]}`;
  return { bytes: Buffer.from(text, 'utf8'), strings };
}

void describe('scanner fast paths on a hand-made snapshot', () => {
  const layouts = [
    { name: "V8's layout", sep: { line: '\n,', value: ',', string: ',\n' } },
    { name: 'other whitespace', sep: { line: ' ,\r\n', value: ' , ', string: ' ,\t' } },
    { name: 'no newlines', sep: { line: ',', value: ',', string: ',' } },
  ];

  void test('the summary: escaped class names decoded between skipped strings, counts exact', () => {
    const { bytes } = handMade(layouts[0]!.sep);
    const summary = summarize([bytes]);
    SummarySchema.parse(summary);
    assert.equal(summary.nodeCount, 7);
    assert.equal(summary.edgeCount, 5);
    assert.deepEqual(
      summary.classes.map((c) => [c.name, c.count, c.selfSize]),
      [
        ['Quote"Back\\slash', 2, 1_234_607],
        ['<div>', 1, 100],
        ['(string)', 2, 72],
        ['Plain', 1, 16],
        ['(synthetic)', 1, 0],
      ],
    );
    assert.deepEqual(summary.detached?.classes, [{ name: '<div>', count: 1, selfSize: 100 }]);
    assert.deepEqual(
      summary.largestStrings?.map((s) => s.preview),
      ['\\'.repeat(33) + '"', 'x\\"y\\\\"z'],
      'strings after 33 backslashes and after escaped quotes, decoded',
    );
  });

  for (const { name, sep } of layouts) {
    void test(`${name}: the same summary cut in two at every byte, and in 1-byte chunks`, () => {
      const { bytes } = handMade(sep);
      const expected = summarize([bytes]);
      assert.deepEqual({ ...expected, snapshotBytes: 0 }, { ...summarize([handMade(layouts[0]!.sep).bytes]), snapshotBytes: 0 }, 'whitespace does not matter');
      for (let cut = 1; cut < bytes.length; cut++) {
        assert.deepEqual(summarize([Buffer.from(bytes.subarray(0, cut)), Buffer.from(bytes.subarray(cut))]), expected, `cut at ${cut}`);
      }
      const ones: Buffer[] = [];
      for (let i = 0; i < bytes.length; i++) ones.push(bytes.subarray(i, i + 1));
      assert.deepEqual(summarize(ones), expected);
    });
  }

  void test('raw control characters: not checked in skipped strings (never read), snapshot_invalid in decoded ones', () => {
    const { bytes } = handMade(layouts[0]!.sep);
    const text = bytes.toString('latin1');
    const skipped = Buffer.from(text.replace('ends in a backslash', 'ends\x01in a backslash'), 'latin1');
    assert.deepEqual(summarize([skipped]), summarize([bytes]));
    const decoded = Buffer.from(text.replace('"Plain"', '"Pl\x01in"'), 'latin1');
    assert.throws(
      () => summarize([decoded]),
      (err: unknown) => isCaptureError(err, 'snapshot_invalid') && err.details?.offset === text.indexOf('"Plain"') + 3,
    );
  });

  void test('a garbled section is snapshot_invalid at the bad byte, on the fast path and across a cut', () => {
    const { bytes } = handMade(layouts[0]!.sep);
    const text = bytes.toString('latin1');
    const cases: [string, number, number[]][] = [
      // An empty value in "edges" (only counted, never parsed) and in "nodes".
      [text.replace('"edges":[2,1,7\n,2,2', '"edges":[2,1,7\n,,2'), text.indexOf('"edges":[') + 16, [-2, 0, 1]],
      [text.replace('"nodes":[9,0,1', '"nodes":[9,,1'), text.indexOf('"nodes":[') + 11, [-2, 0, 1]],
      // Digits separated by a newline, a letter among digits.
      [text.replace('\n,3,4,21', '\n,3,4\n21'), text.indexOf('\n,3,4,21') + 6, [-2, 0, 1]],
      [text.replace('0\n,3,3,3,40', '0\n3,3,3,40'), text.indexOf('0\n,3,3,3,40') + 2, [-2, 0, 1]],
      [text.replace('1234567', '12x4567'), text.indexOf('1234567') + 2, [-2, 0, 1]],
      // A skipped string whose closing quote is gone: the skip runs into the next
      // string's text; the error names the raw newline it swallowed (when that is
      // in the chunk where the structure broke: not for a cut after it).
      [text.replace('"<dummy>"', '"<dummy> '), text.indexOf('"<dummy>"') + 10, [-2, 0]],
    ];
    for (const [bad, at, cuts] of cases) {
      const input = Buffer.from(bad, 'latin1');
      for (const cut of [-at, ...cuts].map((d) => at + d)) {
        const chunks = cut <= 0 ? [input] : [input.subarray(0, cut), input.subarray(cut)];
        assert.throws(
          () => summarize(chunks),
          (err: unknown) => isCaptureError(err, 'snapshot_invalid') && err.details?.offset === at,
          `${JSON.stringify(bad.slice(at - 12, at + 8))}, cut at ${cut}`,
        );
      }
    }
  });
});
