/**
 * The redactor on its own thread (RedactorThread, the one captures use) gives
 * the very bytes and report of the redactor run inline, whatever the chunks'
 * sizes; holds at most its 8 blocks however far ahead the writer is; and fails
 * with the redactor's `snapshot_invalid` on a snapshot it cannot redact. The
 * snapshot is this process's own, with secrets planted in it.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import { after, before, describe, test } from 'node:test';
import { SnapshotRedactor } from '@heapcap/analysis';
import { RedactorThread } from '@heapcap/pipeline';
import { tmpDir, tokensIn, type TmpDir } from '@heapcap/testkit';

/** Everything `redactor` emits for `bytes` written in chunks of `sizes` (cycled). */
async function through(redactor: RedactorThread, bytes: Buffer, sizes: number[]): Promise<Buffer> {
  const out: Buffer[] = [];
  const emit = (b: Buffer): void => void out.push(Buffer.from(b));
  try {
    for (let at = 0, k = 0; at < bytes.length; k++) {
      const n = sizes[k % sizes.length] as number;
      redactor.write(bytes.subarray(at, at + n), emit);
      at += n;
    }
    await redactor.end();
  } finally {
    redactor.close();
  }
  return Buffer.concat(out);
}

void describe('RedactorThread', { timeout: 300_000 }, () => {
  let work: TmpDir;
  let snapshot: Buffer;
  // Flat strings (JSON.parse makes them): V8 names a concatenated string's node "(concatenated string)", not its text.
  const tokens = Array.from({ length: 20 }, (_, i) => JSON.parse(JSON.stringify(`thread-secret-${i}-${'x'.repeat(i * 7)}-${Math.random().toString(36).slice(2)}`)) as string);
  const held: unknown[] = [];
  before(async () => {
    work = await tmpDir('heapcap-redact-thread');
    held.push(new Map(tokens.map((t, i) => [i, t])), { values: tokens.slice() }, tokens.map((t) => `${t}!`));
    snapshot = await readFile(writeHeapSnapshot(join(work.path, 'self.heapsnapshot')));
  });
  after(async () => {
    held.length = 0;
    await work?.cleanup();
  });

  void test('the bytes and the report of the inline redactor, in any chunking', async () => {
    assert.deepEqual(tokensIn(snapshot, tokens), tokens, 'the secrets are in the snapshot');
    const inline = new SnapshotRedactor();
    const expected: Buffer[] = [];
    inline.write(snapshot, (b) => void expected.push(Buffer.from(b)));
    const report = inline.end();
    for (const sizes of [[7, 65_537, 3 * 1024 * 1024], [1024 * 1024], [100 * 1024 + 3]]) {
      const thread = new RedactorThread();
      const bytes = await through(thread, snapshot, sizes);
      assert.ok(bytes.equals(Buffer.concat(expected)), `same bytes with chunks of ${sizes.join(', ')}`);
      assert.deepEqual(thread.redaction, report);
      assert.deepEqual(tokensIn(bytes, tokens), []);
    }
  });

  void test('bounded: at most 8 blocks however fast it is written', async () => {
    const thread = new RedactorThread();
    await through(thread, snapshot, [4 * 1024 * 1024]);
    assert.ok(snapshot.length > 16 * 1024 * 1024, `a snapshot of ${snapshot.length} bytes is more than the blocks hold`);
    assert.ok(thread.blocksAllocated <= 8, `${thread.blocksAllocated} blocks`);
  });

  void test('a snapshot it cannot redact fails with snapshot_invalid', async () => {
    const cut = snapshot.subarray(0, snapshot.length - 1000);
    await assert.rejects(through(new RedactorThread(), cut, [1024 * 1024]), (err: Error & { code?: string }) => err.code === 'snapshot_invalid');
    const garbled = Buffer.from(snapshot);
    garbled.write('x', garbled.indexOf('"nodes":[') + 12);
    await assert.rejects(through(new RedactorThread(), garbled, [64 * 1024]), (err: Error & { code?: string }) => err.code === 'snapshot_invalid');
  });
});
