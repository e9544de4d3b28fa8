/**
 * Chunk frames decoded from bytes: always exactly the bytes the generic path
 * (parse the whole message, encode the chunk as UTF-8) would give, and no
 * fast path for a frame that only looks like a chunk.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assembleWat } from '@heapcap/testkit';
import { decodeChunkFrame, isChunkFrame } from '../src/chunk-frame.ts';
import { UNESCAPE_WASM } from '../src/unescape-wasm.ts';

const frameOf = (chunk: string): Buffer =>
  Buffer.from(JSON.stringify({ method: 'HeapProfiler.addHeapSnapshotChunk', params: { chunk } }), 'utf8');

/** What the generic path gives for a frame. */
const generic = (frame: Buffer): Buffer =>
  Buffer.from((JSON.parse(frame.toString('utf8')) as { params: { chunk: string } }).params.chunk, 'utf8');

void describe('chunk frames', () => {
  void test('snapshot-like text: quotes, newlines, backslashes, escaped unicode in the snapshot itself', () => {
    const text = '{"snapshot":{"meta":{"node_fields":["type","name"]}},\n"nodes":[9,1,3,56,3,0,0\n,4,331],\n"strings":["a\\"b","c\\\\d","\\u00e9"]}';
    const frame = frameOf(text);
    assert.ok(isChunkFrame(frame));
    assert.deepEqual(decodeChunkFrame(frame), Buffer.from(text, 'utf8'));
  });

  void test('non-ASCII, astral, lone surrogates, control characters, empty: same bytes as the generic path', () => {
    for (const text of ['', 'é€', 'x😀y', 'a\uD800b', '\uDC00', '\u0000\u0001\t\r\n\u001f', '"', '\\', 'tail\\']) {
      const frame = frameOf(text);
      assert.ok(isChunkFrame(frame), JSON.stringify(text));
      assert.deepEqual(decodeChunkFrame(frame), generic(frame), JSON.stringify(text));
    }
  });

  void test('\\u escapes and \\/ in the frame itself (another encoder than JSON.stringify)', () => {
    const frame = Buffer.from('{"method":"HeapProfiler.addHeapSnapshotChunk","params":{"chunk":"a\\u00e9\\ud83d\\ude00\\/\\b\\f"}}', 'latin1');
    assert.ok(isChunkFrame(frame));
    assert.deepEqual(decodeChunkFrame(frame), Buffer.from('aé😀/\b\f', 'utf8'));
  });

  void test('1 MiB chunks (Chromium): escapes anywhere, the frame left as it was', () => {
    // Escaped forms as they appear in the frame, placed so that each one starts 0-6 bytes before the first 64 KiB cut.
    for (const escaped of ['\\n', '\\"', '\\\\', '\\\\\\\\', '\\\\\\"']) {
      for (let shift = 0; shift <= 6; shift++) {
        const body = `${'x'.repeat(65_536 - shift)}${escaped}${'y'.repeat(70_000)}${escaped}${'z'.repeat(1_000_000)}`;
        const frame = Buffer.from(`{"method":"HeapProfiler.addHeapSnapshotChunk","params":{"chunk":"${body}"}}`, 'latin1');
        const copy = Buffer.from(frame);
        assert.deepEqual(decodeChunkFrame(frame), generic(frame), `${escaped} shifted by ${shift}`);
        assert.ok(frame.equals(copy), 'the frame is unchanged');
      }
    }
  });

  void test('a frame that only looks like a chunk is left to the generic path', () => {
    // More params after the chunk: the fast path would otherwise swallow them into the snapshot.
    const extra = Buffer.from('{"method":"HeapProfiler.addHeapSnapshotChunk","params":{"chunk":"abc","more":"x"}}', 'latin1');
    assert.ok(isChunkFrame(extra));
    assert.equal(decodeChunkFrame(extra), undefined);
    const big = Buffer.from(`{"method":"HeapProfiler.addHeapSnapshotChunk","params":{"chunk":"${'a'.repeat(200_000)}","more":"${'b'.repeat(10)}"}}`, 'latin1');
    assert.equal(decodeChunkFrame(big), undefined);
    for (const other of [
      '{"method":"HeapProfiler.addHeapSnapshotChunk","params":{"chunk":"abc"},"sessionId":"S"}',
      '{"method":"HeapProfiler.reportHeapSnapshotProgress","params":{"done":1,"total":2}}',
      '{"id":7,"result":{}}',
      '{"method":"HeapProfiler.addHeapSnapshotChunk","params":{"chunk":"',
    ]) {
      assert.equal(isChunkFrame(Buffer.from(other, 'latin1')), false, other);
    }
  });
  void test('the WebAssembly routine is unescape.wat, assembled', async () => {
    assert.deepEqual(await assembleWat(new URL('../src/unescape.wat', import.meta.url)), Buffer.from(UNESCAPE_WASM), 'unescape-wasm.ts is stale: run node scripts/assemble-wasm.mjs');
  });

  void test('every escape JSON has, at every position, and what the routine refuses: same bytes as the generic path', () => {
    const escapes = ['\\n', '\\"', '\\\\', '\\/', '\\b', '\\f', '\\r', '\\t'];
    for (const e of escapes) {
      // Every offset within and across the routine's 16-byte blocks, escapes back to back, at both ends.
      const shifted = Array.from({ length: 34 }, (_, k) => `${'x'.repeat(k)}${e}${'y'.repeat(k % 17)}${e}${e}${'z'.repeat(40)}`);
      for (const body of [`${e}`, `a${e}`, `${e}b`, `a${e}${e}b`, `${'x'.repeat(100_000)}${e}`, ...shifted]) {
        const frame = Buffer.from(`{"method":"HeapProfiler.addHeapSnapshotChunk","params":{"chunk":"${body}"}}`, 'latin1');
        assert.deepEqual(decodeChunkFrame(frame), generic(frame), JSON.stringify(body));
      }
    }
    // Not a JSON string body: an unknown escape, a raw control character, a lone quote, a backslash at the end.
    for (const body of ['a\\qb', 'a\u0001b', 'a"b', 'ab\\']) {
      const frame = Buffer.from(`{"method":"HeapProfiler.addHeapSnapshotChunk","params":{"chunk":"${body}"}}`, 'latin1');
      assert.equal(decodeChunkFrame(frame), undefined, JSON.stringify(body));
    }
  });
});
