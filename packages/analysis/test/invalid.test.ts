/**
 * Malformed and truncated snapshots fail with `snapshot_invalid` and the byte
 * offset where parsing failed, in the summarizer and in the analysis, never
 * with another exception; files above the limit are refused before loading.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { tmpDir, type TmpDir } from '@heapcap/testkit';
import { isCaptureError, type CaptureError } from '@heapcap/errors';
import { analyzeGraph, analyzeSnapshotFile, createGraphLoader, createSummarizer, leakHunt, summarizeFile } from '../src/index.ts';
import { random, startLeakTarget, writeSnapshot } from './helpers.ts';

const MAX_BYTES = 1e9;

/** Runs `fn`, expects `snapshot_invalid`, returns the error's offset. */
function offsetOf(fn: () => unknown): number {
  try {
    fn();
  } catch (err) {
    assert.ok(isCaptureError(err, 'snapshot_invalid'), `expected snapshot_invalid, got ${String(err)}`);
    assert.ok(err.hint !== undefined && err.hint.length > 0, 'a hint');
    const offset = err.details?.offset;
    assert.equal(typeof offset, 'number');
    assert.match(err.message, new RegExp(`at byte ${String(offset)}`));
    return offset as number;
  }
  assert.fail('no error');
}

const summarize = (bytes: Buffer) => (): unknown => {
  const s = createSummarizer();
  s.write(bytes);
  return s.end();
};
const analyze = (bytes: Buffer) => (): unknown => {
  const loader = createGraphLoader();
  loader.write(bytes);
  return analyzeGraph(loader.end());
};

void describe('invalid snapshots', { timeout: 300_000 }, () => {
  let work: TmpDir;
  let bytes: Buffer;
  let file: string;
  // Where the sections start, to place truncations and corruptions inside them.
  const at = { nodes: 0, edges: 0, strings: 0 };

  before(async () => {
    work = await tmpDir('heapcap-invalid');
    const target = await startLeakTarget();
    try {
      file = await writeSnapshot(target, join(work.path, 'good.heapsnapshot'));
    } finally {
      await target.kill();
    }
    bytes = await readFile(file);
    const text = bytes.toString('latin1');
    at.nodes = text.indexOf('"nodes":[') + 9;
    at.edges = text.indexOf('"edges":[') + 9;
    at.strings = text.indexOf('"strings":[') + 11;
    assert.ok(at.nodes > 9 && at.edges > at.nodes && at.strings > at.edges);
  });
  after(async () => {
    await work?.cleanup();
  });

  void test('truncated anywhere: the offset is where the input ended', () => {
    const cuts = [0, 1, 20, at.nodes - 3, at.nodes + 101, at.edges + 57, at.strings + 5, bytes.length - 2, bytes.length - 1];
    for (const cut of cuts) {
      const part = bytes.subarray(0, cut);
      assert.equal(offsetOf(summarize(part)), cut, `summary, truncated at ${cut}`);
      assert.equal(offsetOf(analyze(part)), cut, `analysis, truncated at ${cut}`);
    }
  });

  void test('a bad byte inside a section: the offset is that byte', () => {
    for (const [where, pos] of [
      ['nodes', at.nodes + 1001],
      ['edges', at.edges + 2003],
    ] as const) {
      const bad = Buffer.from(bytes);
      bad[pos] = 0x78; // 'x'
      assert.equal(offsetOf(summarize(bad)), pos, `summary, ${where}`);
      assert.equal(offsetOf(analyze(bad)), pos, `analysis, ${where}`);
    }
    const control = Buffer.from(bytes);
    const inString = bytes.indexOf('"', at.strings + 10) + 1; // the first byte of a string
    control[inString] = 0x01;
    assert.equal(offsetOf(summarize(control)), inString, 'a raw control character in a string');
    assert.equal(offsetOf(analyze(control)), inString);
  });

  void test('not a snapshot at all', () => {
    assert.equal(offsetOf(summarize(Buffer.from('[1,2,3]'))), 0);
    assert.equal(offsetOf(summarize(Buffer.from('\x00\x01binary'))), 0);
    assert.equal(offsetOf(summarize(Buffer.from('{"a":1}'))), 5, 'a key before the "snapshot" header');
    assert.equal(offsetOf(summarize(Buffer.from('{"snapshot":{"meta":{}}}'))), 23, 'a header without layouts');
    assert.equal(offsetOf(summarize(Buffer.concat([bytes, Buffer.from(' x')]))), bytes.length + 1, 'garbage after the end');
    // A well-formed snapshot without a single node: nothing to summarize wrongly, nothing to analyse.
    const header = JSON.stringify((JSON.parse(bytes.toString('utf8')) as { snapshot: { meta: unknown } }).snapshot.meta);
    const empty = Buffer.from(`{"snapshot":{"meta":${header},"node_count":0,"edge_count":0},"nodes":[],"edges":[],"strings":[]}`);
    const s = createSummarizer();
    s.write(empty);
    assert.equal(s.end().nodeCount, 0);
    assert.equal(offsetOf(analyze(empty)), empty.length, 'no root to analyse from');
  });

  void test('random corruption never escapes as anything but snapshot_invalid (200 cases)', () => {
    const next = random(7);
    for (let k = 0; k < 200; k++) {
      const bad = Buffer.from(bytes);
      const pos = Math.floor(next() * bytes.length);
      bad[pos] = Math.floor(next() * 256);
      for (const run of [summarize(bad), analyze(bad)]) {
        try {
          run();
        } catch (err) {
          assert.ok(isCaptureError(err, 'snapshot_invalid'), `byte ${pos} → ${bad[pos]}: ${String((err as Error).stack)}`);
        }
      }
    }
  });

  void test('files: truncated plain and gzipped files, and the size limit', async () => {
    const truncated = join(work.path, 'truncated.heapsnapshot');
    await writeFile(truncated, bytes.subarray(0, at.edges + 10));
    await assert.rejects(analyzeSnapshotFile(truncated, { maxBytes: MAX_BYTES }), (err: CaptureError) => err.code === 'snapshot_invalid' && err.details?.offset === at.edges + 10);
    await assert.rejects(summarizeFile(truncated), (err: CaptureError) => err.code === 'snapshot_invalid' && err.details?.offset === at.edges + 10);
    const gz = gzipSync(bytes);
    const gzTruncated = join(work.path, 'truncated.heapsnapshot.gz');
    await writeFile(gzTruncated, gz.subarray(0, gz.length >> 1));
    await assert.rejects(analyzeSnapshotFile(gzTruncated, { maxBytes: MAX_BYTES }), (err: CaptureError) => err.code === 'snapshot_invalid' && typeof err.details?.offset === 'number');
    const gzFile = join(work.path, 'good.heapsnapshot.gz');
    await writeFile(gzFile, gz);
    // The limit applies to the snapshot's JSON bytes (the gzip trailer tells them), checked before loading.
    for (const path of [file, gzFile]) {
      await assert.rejects(analyzeSnapshotFile(path, { maxBytes: bytes.length - 1 }), (err: CaptureError) => {
        assert.equal(err.code, 'analysis_too_large');
        assert.deepEqual(err.details, { bytes: bytes.length, maxBytes: bytes.length - 1 });
        assert.match(err.hint ?? '', /HEAPCAP_ANALYSIS_MAX_BYTES/);
        return true;
      });
    }
    await assert.rejects(leakHunt(file, file, gzFile, { maxBytes: bytes.length - 1 }), (err: CaptureError) => err.code === 'analysis_too_large');
    assert.equal((await analyzeSnapshotFile(gzFile, { maxBytes: bytes.length })).snapshotBytes, bytes.length);
  });
});
