/**
 * rememberCheck: a passed storage check stands for a while (no probe file per
 * capture), and a failed write or the end of the while makes the next check
 * real again, so a store that went bad is found.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { isCaptureError } from '@heapcap/errors';
import { createFileSink } from '../src/fs/sink.ts';
import { rememberCheck } from '../src/remember-check.ts';

let work: string;
before(async () => {
  work = await mkdtemp(join(tmpdir(), 'heapcap-remember-check-'));
});
after(async () => {
  await rm(work, { recursive: true, force: true });
});

/** A root that cannot take files any more: a plain file where the directory was. */
async function breakRoot(root: string): Promise<void> {
  await rm(root, { recursive: true, force: true });
  await writeFile(root, 'not a directory');
}

const ref = (n: number) => ({ captureId: `c${n}`, targetId: 't', startedAt: new Date('2026-11-27T00:00:00Z'), gzip: false });

void test('a passed check stands for its while, and is real again after it', async () => {
  const root = join(work, 'while');
  let now = 1_000;
  const store = rememberCheck(createFileSink({ dir: root }), 10_000, () => now);
  await store.check();
  await breakRoot(root);
  // Within the while: the store is not probed (the broken root would fail a real check).
  now += 9_000;
  await store.check();
  now += 1_000;
  await assert.rejects(store.check(), (err) => isCaptureError(err) && err.code.startsWith('storage_'));
  // A failed check is not remembered: the next one is real again.
  await assert.rejects(store.check(), (err) => isCaptureError(err) && err.code.startsWith('storage_'));
});

void test('a failed write forgets the passed check: the next capture checks for real', async () => {
  const root = join(work, 'write');
  const now = 1_000;
  const store = rememberCheck(createFileSink({ dir: root }), 10_000, () => now);
  await store.check();
  await store.put(ref(1), Readable.from([Buffer.from('{}')]));
  await breakRoot(root);
  await store.check();
  await assert.rejects(store.put(ref(2), Readable.from([Buffer.from('{}')])));
  await assert.rejects(store.check(), (err) => isCaptureError(err) && err.code.startsWith('storage_'));
  // The store works again: the check passes and stands again.
  await rm(root, { force: true });
  await store.check();
  await breakRoot(root);
  await store.check();
});
