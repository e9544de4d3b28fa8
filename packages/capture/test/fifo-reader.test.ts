/**
 * The FIFO reader of the pipe transport: a Linux FIFO holds 64 KiB, so a
 * reader that only reads when this thread is idle makes the target's
 * writeHeapSnapshot() wait in write() whenever this thread hashes, summarizes
 * or gzips. The reader drains it on a thread of its own. These tests block
 * this thread synchronously (as a long hash or summary of a block would) and
 * show that the writer still gets its bytes out, that the reader stops and
 * resumes when every block is still here, and that every byte arrives in order.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { tmpDir, type TmpDir } from '@heapcap/testkit';
import { openFifoReader } from '../src/pipe-transport.ts';

/** Writes `mib` MiB of a deterministic pattern into the FIFO, 64 KiB per write, noting its progress in `progress` after each write. */
const WRITER = `
const fs = require('node:fs');
const [fifo, mib, progress] = process.argv.slice(1);
const fd = fs.openSync(fifo, 'w');
const piece = Buffer.alloc(64 * 1024);
let written = 0;
for (let i = 0; i < Number(mib) * 16; i++) {
  for (let k = 0; k < piece.length; k += 4) piece.writeUInt32LE((i * piece.length + k) >>> 0, k);
  fs.writeSync(fd, piece);
  written += piece.length;
  fs.writeFileSync(progress + '.tmp', String(written));
  fs.renameSync(progress + '.tmp', progress);
}
fs.closeSync(fd);
`;

function expectedSha(mib: number): string {
  const hash = createHash('sha256');
  const piece = Buffer.alloc(64 * 1024);
  for (let i = 0; i < mib * 16; i++) {
    for (let k = 0; k < piece.length; k += 4) piece.writeUInt32LE((i * piece.length + k) >>> 0, k);
    hash.update(piece);
  }
  return hash.digest('hex');
}

function progressOf(file: string): number {
  return existsSync(file) ? Number(readFileSync(file, 'utf8')) : 0;
}

/** Keeps this thread busy, as a long synchronous step would, until `done()` or the deadline. */
function busyUntil(done: () => boolean, deadlineMs: number, what: string): void {
  const end = Date.now() + deadlineMs;
  while (!done()) {
    if (Date.now() > end) assert.fail(`${what} within ${deadlineMs} ms while this thread was busy`);
  }
}

void describe('the pipe transport reads its FIFO on a thread of its own', { timeout: 120_000 }, () => {
  let work: TmpDir;
  before(async () => {
    work = await tmpDir('heapcap-fifo-reader');
  });
  after(async () => {
    await work?.cleanup();
  });

  async function run(name: string, mib: number, blocks: number | undefined, whileBusy: (progress: () => number, stalls: () => number) => void): Promise<{ stalls: number }> {
    const fifo = join(work.path, `${name}.fifo`);
    const progress = join(work.path, `${name}.progress`);
    execFileSync('mkfifo', ['-m', '600', fifo]);
    const hash = createHash('sha256');
    let got = 0;
    const reader = openFifoReader(
      fifo,
      (bytes) => {
        hash.update(bytes);
        got += bytes.length;
      },
      { blocks },
    );
    const writer = spawn(process.execPath, ['-e', WRITER, fifo, String(mib), progress], { stdio: 'inherit' });
    const exited = new Promise<number | null>((resolve) => writer.once('exit', resolve));
    try {
      whileBusy(
        () => progressOf(progress),
        () => reader.stalls,
      );
      assert.equal(await exited, 0, 'the writer exits cleanly');
      reader.release();
      await reader.ended;
      assert.equal(got, mib * 1024 * 1024);
      assert.equal(reader.bytes, got);
      assert.equal(hash.digest('hex'), expectedSha(mib), 'every byte, in order');
      return { stalls: reader.stalls };
    } finally {
      writer.kill('SIGKILL');
      reader.close();
    }
  }

  void test('the writer gets 2 MiB out while this thread never returns to its event loop', async () => {
    const { stalls } = await run('busy', 2, undefined, (progress) => {
      // A reader on this thread would let through one FIFO's worth (64 KiB) and then block the writer for good.
      busyUntil(() => progress() === 2 * 1024 * 1024, 60_000, 'the writer did not finish its 2 MiB');
    });
    assert.equal(stalls, 0, 'four 1 MiB blocks hold 2 MiB without stopping');
  });

  void test('with every block still here the reader stops, and carries on once they come back: nothing lost', async () => {
    const { stalls } = await run('stall', 8, 2, (progress, stalls) => {
      // Two blocks: the first read goes over at once in one, the second fills; then the reader must stop.
      busyUntil(() => stalls() >= 1, 60_000, 'the reader did not stop with both blocks out');
      assert.ok(progress() < 3 * 1024 * 1024, `the writer was held back (wrote ${progress()} bytes while both blocks were out)`);
    });
    assert.ok(stalls >= 1);
  });

  void test('close() while the writer is mid-way stops the thread; the writer gets EPIPE instead of waiting forever', async () => {
    const fifo = join(work.path, 'close.fifo');
    execFileSync('mkfifo', ['-m', '600', fifo]);
    let got = 0;
    const reader = openFifoReader(fifo, (bytes) => {
      got += bytes.length;
    });
    const writer = spawn(process.execPath, ['-e', WRITER, fifo, '64', join(work.path, 'close.progress')], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    writer.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => writer.once('exit', resolve));
    // Wait for bytes on this thread's event loop (a condition, with the suite's timeout as the deadline).
    while (got === 0) await new Promise((resolve) => setImmediate(resolve));
    reader.close();
    await assert.rejects(reader.ended, /closed/);
    assert.notEqual(await exited, 0, 'the writer failed instead of blocking');
    assert.match(stderr, /EPIPE/);
  });
});
