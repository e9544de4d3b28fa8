/**
 * Scratch files of follow-up jobs carry host and pid; a starting worker
 * removes those of this host's processes that are gone, and only those.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { tmpDir } from '@heapcap/testkit';
import { scratchPrefix, sweepOrphanScratch } from '../src/temp-files.ts';

void test('a dead process of this host loses its scratch; a live one, this one, another host and other files keep theirs', async (t) => {
  const dir = await tmpDir('heapcap-scratch');
  t.after(() => dir.cleanup());
  const dead = spawn(process.execPath, ['-e', '0']);
  await once(dead, 'exit');
  const live = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)']);
  t.after(() => live.kill('SIGKILL'));
  const mine = scratchPrefix('hunt', 'h1');
  const of = (pid: number | undefined): string => mine.replace(`-p${process.pid}-`, `-p${pid ?? 0}-`);
  const deadHunt = `${of(dead.pid)}abc`;
  const deadAnalysis = `${scratchPrefix('analysis', 'c1').replace(`-p${process.pid}-`, `-p${dead.pid ?? 0}-`)}x.heapsnapshot`;
  const liveHunt = `${of(live.pid)}def`;
  const ownHunt = `${mine}ghi`;
  const otherHost = `heapcap-hunt-h2-hsomewhere_else-p${dead.pid ?? 0}-jkl`;
  const unrelated = 'heapcap-hunt-old-format-XYZ';
  for (const d of [deadHunt, liveHunt, ownHunt, otherHost, unrelated]) {
    await mkdir(join(dir.path, d));
    await writeFile(join(dir.path, d, 'baseline.heapsnapshot'), '{}');
  }
  await writeFile(join(dir.path, deadAnalysis), '{}');
  const removed = await sweepOrphanScratch(dir.path);
  assert.deepEqual(removed.sort(), [deadAnalysis, deadHunt].sort());
  assert.deepEqual((await readdir(dir.path)).sort(), [liveHunt, ownHunt, otherHost, unrelated].sort());
});
