/**
 * The fault matrix (issue 25): each fault × each capture phase against
 * `bin/heapcap serve` (faults/cell.ts says what a cell does and checks).
 * `npm test` runs a short form (SHORT below); `npm run faults` runs every cell
 * and writes the table to docs/fault-matrix.md.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { fixturePath, startMinio, startNodeTarget, startPersistentRedis, tmpDir, type MinioServer, type NodeTarget, type PersistentRedis, type TmpDir } from '@heapcap/testkit';
import { FAULTS, HEAP_MB, HOLD_MS, PHASES, SPILL_CEILING_MB, SPILL_MB, runCell, type CellPhase, type CellResult, type Expected, type Fault, type Rig } from './faults/cell.ts';

const FULL = process.env['HEAPCAP_FAULTS'] === 'full';
/** Where the full run writes its table (set by `npm run faults`). */
const TABLE = process.env['HEAPCAP_FAULTS_TABLE'];
/**
 * The cells `npm test` runs: a fault that fails the capture and one that must not, each in a phase a poll
 * cannot miss: `generate`, the longest (`serialize` of an 80 MB heap lasts about a second, and a test run
 * beside other heavy work once polled past it), and `upload`, held by the MinIO proxy until MinIO is frozen.
 * The second was `redis-paused` in `generate` (45 s in the full run, 28 s alone); `minio-paused` in `upload`
 * took 18 s in the full run and covers the store and the new seam.
 */
const SHORT: [Fault, CellPhase][] = [
  ['target-killed', 'generate'],
  ['minio-paused', 'upload'],
];

/**
 * What each cell must end in. A fault that clears (paused, restarted) must not
 * fail the capture: it waits, or a retry takes it. A killed target fails it
 * with the phase it was in; before it started, the retries find nothing there.
 */
function expected(fault: Fault, phase: CellPhase): Expected {
  // A capture accepted but not started when Redis lost everything: its job went with the data, so the API
  // that accepted it queues it again (issue 40). A running one finishes and its worker writes the record again.
  if (fault === 'redis-emptied') return { status: 'succeeded' };
  // Only chunks arriving faster than the store takes them are written to the spill, and chunks arrive only in
  // `serialize`: there, with the store holding the first part (cell.ts, SPILL_HOLDS), the next spill write gets
  // ENOSPC, and the capture fails at once with `storage_failed`, which the worker does not retry (only
  // `storage_unavailable` is: docs/operations.md's error table).
  // Before it nothing is written to the spill dir (the capture is held in its phase until the disk has room
  // again); after it every byte has been read from the spill, and the summary and manifest go to the store.
  if (fault === 'spill-full') return phase === 'serialize' ? { status: 'failed', code: 'storage_failed', phase: 'serialize' } : { status: 'succeeded' };
  if (fault !== 'target-killed') return { status: 'succeeded' };
  if (phase === 'queued' || phase === 'connect') return { status: 'failed', code: 'target_unreachable', phase: 'connect' };
  // Once every byte of the snapshot is in, the target is no longer needed: its death does not undo the capture.
  if (phase === 'upload' || phase === 'summary') return { status: 'succeeded' };
  return { status: 'failed', code: 'target_closed', phase };
}

/**
 * `HEAPCAP_FAULTS_ONLY=serve-killed,redis-emptied` and `HEAPCAP_FAULTS_PHASES=upload,summary`: the full run's
 * cells of those faults and phases only (their rows of the table are replaced).
 */
const ONLY = process.env['HEAPCAP_FAULTS_ONLY']?.split(',');
const ONLY_PHASES = process.env['HEAPCAP_FAULTS_PHASES']?.split(',');
for (const name of ONLY ?? []) assert.ok((FAULTS as readonly string[]).includes(name), `HEAPCAP_FAULTS_ONLY: no fault ${name} (${FAULTS.join(', ')})`);
for (const name of ONLY_PHASES ?? []) assert.ok((PHASES as readonly string[]).includes(name), `HEAPCAP_FAULTS_PHASES: no phase ${name} (${PHASES.join(', ')})`);
const cells: [Fault, CellPhase][] = FULL
  ? FAULTS.filter((f) => ONLY === undefined || ONLY.includes(f)).flatMap((f) => PHASES.filter((p) => ONLY_PHASES === undefined || ONLY_PHASES.includes(p)).map((p): [Fault, CellPhase] => [f, p]))
  : SHORT;
const results: CellResult[] = [];
let dir: TmpDir;
let redis: PersistentRedis;
let minio: MinioServer;
let spare: NodeTarget;
let rig: Rig;

before(async () => {
  [dir, redis, minio, spare] = await Promise.all([tmpDir('heapcap-fault-matrix'), startPersistentRedis(), startMinio(), startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '10' } })]);
  await minio.createBucket('heapcap');
  rig = { redis, minio, bucket: 'heapcap', spare, dir: dir.path };
});
after(async () => {
  if (TABLE !== undefined && results.length > 0) await writeFile(TABLE, renderTable(results, await readFile(TABLE, 'utf8').catch(() => '')));
  await spare?.kill('SIGKILL');
  await minio?.stop();
  await redis?.destroy();
  await dir?.cleanup();
});

void describe(`fault matrix (${FULL ? 'full' : 'short'}: ${cells.length} cells)`, { timeout: cells.length * 300_000 }, () => {
  cells.forEach(([fault, phase], i) => {
    const want = expected(fault, phase);
    void test(`${fault} during ${phase}: ${want.status}${want.code === undefined ? '' : ` ${want.code} in ${want.phase}`}, nothing left behind, serve healthy after`, async (t) => {
      const r = await runCell(rig, fault, phase, i);
      results.push(r);
      t.diagnostic(JSON.stringify(r));
      assert.equal(r.status, want.status, JSON.stringify(r));
      if (want.code !== undefined) {
        assert.equal(r.code, want.code, JSON.stringify(r));
        assert.equal(r.failedPhase, want.phase, JSON.stringify(r));
        assert.deepEqual(r.objects, [], 'a failed capture leaves no object');
        // The spill's own failure, not the held store's.
        if (fault === 'spill-full') assert.match(r.message ?? '', /ENOSPC|no space/i, 'the spill write failed');
      } else {
        assert.ok(r.objects.some((o) => o.endsWith('.heapsnapshot.gz') || o.endsWith('.heapsnapshot')), `the artifact among ${r.objects.join(', ')}`);
      }
      assert.equal(r.multipartUploads, 0, 'no multipart upload left open');
      assert.equal(r.lockHeld, false, 'the target lock released');
      assert.equal(r.healthyAfter, true, 'ready, and the next capture succeeds');
      if (fault === 'spill-full') assert.deepEqual(r.spillFiles, [], 'no file left in the spill directory');
    });
  });
});

const HEADER = '| fault | phase | record | code (phase) | attempts | objects left | multipart uploads | lock held | healthy after | cell time | measured |';

/** One cell's row of docs/fault-matrix.md. */
function renderRow(r: CellResult, day: string): string {
  const objects = r.objects.length === 0 ? 'none' : r.objects.map((o) => o.replace(/^.*\//, '').replace(/^[^.]*\./, '')).join(', ');
  return `| ${r.fault} | ${r.phase} | ${r.status} | ${r.code === null ? '—' : `\`${r.code}\` (${r.failedPhase ?? '—'})`} | ${r.attempts} | ${objects} | ${r.multipartUploads} | ${r.lockHeld ? 'yes' : 'no'} | ${r.healthyAfter ? 'yes' : 'no'} | ${(r.ms / 1000).toFixed(1)} s | ${day} |`;
}

/**
 * docs/fault-matrix.md: this run's rows replace the same cells' rows of the
 * file (a run of some faults, HEAPCAP_FAULTS_ONLY, updates only theirs), in
 * the matrix's order; each row says the day it was measured.
 */
function renderTable(rows: CellResult[], previous: string): string {
  const day = new Date().toISOString().slice(0, 10);
  const byCell = new Map<string, string>();
  // A file from before the "measured" column says its one run's day in a "Last run:" line.
  const lastRun = /^Last run: (\d{4}-\d{2}-\d{2})/m.exec(previous)?.[1] ?? 'before 2026-11-27';
  const columns = HEADER.split('|').length;
  for (const line of previous.split('\n')) {
    const m = /^\| (\S+) \| (\S+) \|/.exec(line);
    if (m === null || m[1] === 'fault') continue;
    const n = line.split('|').length;
    if (n === columns) byCell.set(`${m[1]} ${m[2]}`, line);
    else if (n === columns - 1) byCell.set(`${m[1]} ${m[2]}`, `${line} ${lastRun} |`);
  }
  for (const r of rows) byCell.set(`${r.fault} ${r.phase}`, renderRow(r, day));
  const ordered = FAULTS.flatMap((f) => PHASES.map((p) => byCell.get(`${f} ${p}`))).filter((l): l is string => l !== undefined);
  const lines = [
    '# Fault matrix: results',
    '',
    'Generated by `npm run faults` (services/serve/test/fault-matrix.test.ts); do not edit by hand. A run of some faults or phases only',
    '(`HEAPCAP_FAULTS_ONLY`, `HEAPCAP_FAULTS_PHASES`) replaces their rows; "measured" is the day of the run that measured the row.',
    `Each cell: \`bin/heapcap serve\` with Redis (AOF), MinIO and a Node target holding ${HEAP_MB} MB; the fault is injected when the capture reaches the phase, held ${HOLD_MS / 1000} s, then cleared (a killed target stays dead).`,
    `\`spill-full\`: the cell's serve spills to its own ${SPILL_MB} MiB tmpfs past a ${SPILL_CEILING_MB} MiB memory ceiling; the fault fills the tmpfs with filler files, clearing it removes them.`,
    'The capture is held in its phase until the disk has room again (`generate`: the pipe\'s `writeHeapSnapshot` call; `serialize`: the store\'s first part, so chunks must spill; the fault goes in at the first byte spilled).',
    'The phases: `queued` (another capture holds the target lock), then the record\'s live phase: `connect`, `warm` (forced with `warm: always`),',
    '`generate`, `serialize`, `upload` (the record\'s `sink`: every byte read, the store finishing the upload) and `summary` (the summary and',
    'the manifest written). `connect`, `warm`, `upload` and `summary` are too short to catch by polling: a proxy holds what the capture waits on',
    '(the inspector\'s WebSocket handshake, `Debugger.enable`, MinIO\'s CompleteMultipartUpload, the summary\'s PUT) until the fault is in, then lets it through.',
    `${ordered.length} of ${FAULTS.length * PHASES.length} cells have a row.`,
    '"objects left": what is under the cell\'s storage prefix, open multipart uploads, the target lock; "after": `/readyz` 200 and a capture of another target succeeds.',
    '',
    HEADER,
    `|${HEADER.split('|').slice(1, -1).map(() => '---').join('|')}|`,
    ...ordered,
    '',
  ];
  return lines.join('\n');
}
