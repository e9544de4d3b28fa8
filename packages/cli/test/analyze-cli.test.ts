/**
 * `heapcap analyze FILE` and `heapcap diff A B` on snapshots a real Node
 * target wrote: JSON that parses with the published schemas, exact object
 * counts, human tables, and the documented exit codes for a truncated file
 * (snapshot_invalid with its byte offset), a missing file, bad flags and a
 * file above --max-bytes.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { AnalysisSchema, SummaryDiffSchema } from '@heapcap/analysis';
import { fixturePath, heapHolderShape, runHeapcap, startNodeTarget, tmpDir, type TmpDir } from '@heapcap/testkit';
import { EXIT } from '../src/exit-codes.ts';
import { runCli } from './cli-harness.ts';

const analyze = (args: string[]) => runCli(args, { command: 'analyze' });
const diff = (args: string[]) => runCli(args, { command: 'diff' });

/** A heap holder with `mb` MB of orders writes its own snapshot to `path`. */
async function holderSnapshot(mb: number, path: string): Promise<string> {
  const target = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: String(mb) } });
  try {
    await target.request(`writeHeapSnapshot ${path}`, 'WROTE');
    return path;
  } finally {
    await target.kill();
  }
}

void describe('heapcap analyze and diff', { timeout: 300_000 }, () => {
  let work: TmpDir;
  let small: string;
  let large: string;

  before(async () => {
    work = await tmpDir('heapcap-cli-analyze');
    small = await holderSnapshot(2, join(work.path, 'small.heapsnapshot'));
    large = await holderSnapshot(4, join(work.path, 'large.heapsnapshot'));
  });
  after(async () => {
    await work?.cleanup();
  });

  void test('analyze --json: the analysis schema, exact counts, 20 dominators with paths', async () => {
    const res = await analyze([small, '--json']);
    assert.equal(res.code, EXIT.ok, res.stderr);
    const a = AnalysisSchema.parse(JSON.parse(res.stdout));
    assert.equal(a.classes.find((c) => c.name === 'Order')?.count, heapHolderShape(2).orders);
    assert.equal(a.classes.find((c) => c.name === 'LineItem')?.count, heapHolderShape(2).lineItems);
    assert.equal(a.dominators.length, 20);
    const holder = a.dominators.find((d) => d.path?.some((s) => s.edge === '__heapcapHeld'));
    assert.ok(holder !== undefined, 'a dominator reached through the global that holds the orders');
  });

  void test('analyze (text, gzipped file, --top 3): tables for people', async () => {
    const gz = join(work.path, 'small.heapsnapshot.gz');
    await writeFile(gz, gzipSync(await readFile(small)));
    const res = await analyze([gz, '--top', '3']);
    assert.equal(res.code, EXIT.ok, res.stderr);
    assert.match(res.stdout, /^snapshot {3}[\d.]+ MiB of JSON, [\d,]+ nodes/);
    assert.match(res.stdout, /classes, largest retained size first \(3 of \d+\):/);
    assert.match(res.stdout, / {2}3\. .* retained\n {6}\(root\) → /);
    assert.doesNotMatch(res.stdout, / {2}4\. /);
  });

  void test('analyze a truncated file → snapshot_invalid with the offset (exit 4)', async () => {
    const bytes = await readFile(small);
    const cut = Math.floor(bytes.length * 0.6);
    const truncated = join(work.path, 'truncated.heapsnapshot');
    await writeFile(truncated, bytes.subarray(0, cut));
    const res = await analyze([truncated, '--json']);
    assert.equal(res.code, EXIT.snapshot, res.stderr);
    const [first, second] = res.stderr.split('\n');
    assert.equal(first, `snapshot_invalid: not a valid heap snapshot at byte ${cut}: the snapshot ends early (truncated)`);
    assert.match(second ?? '', /^ {2}check: the file is truncated/);
    const printed = JSON.parse(res.stdout) as { error: { code: string; details: { offset: number } } };
    assert.deepEqual([printed.error.code, printed.error.details.offset], ['snapshot_invalid', cut]);
  });

  void test('bad input: a missing file, bad flags (exit 2); a file above --max-bytes (exit 6)', async () => {
    const missing = await analyze([join(work.path, 'nope.heapsnapshot')]);
    assert.equal(missing.code, EXIT.usage);
    assert.match(missing.stderr, /^invalid_input: cannot read .*nope\.heapsnapshot: ENOENT\n {2}check: /);
    for (const args of [[], [small, '--top', '0'], [small, '--bogus'], [small, small]]) {
      const res = await analyze(args);
      assert.equal(res.code, EXIT.usage, `${args.join(' ')}: ${res.stderr}`);
      assert.match(res.stderr, /^invalid_input: /);
    }
    const big = await analyze([small, '--max-bytes', '1000']);
    assert.equal(big.code, EXIT.refused, big.stderr);
    assert.match(big.stderr, /^analysis_too_large: .* above the analysis limit of 1000\n {2}check: raise the limit \(heapcap analyze --max-bytes/);
    const oneFile = await diff([small]);
    assert.equal(oneFile.code, EXIT.usage);
    // A name that is not a file is taken for a capture id: never one of each.
    const mixed = await diff([small, '01M83NOSUCHCAPTURE']);
    assert.equal(mixed.code, EXIT.usage);
    assert.match(mixed.stderr, /^invalid_input: 01M83NOSUCHCAPTURE is not a file, so it was taken for a capture id/);
  });

  void test('bin/heapcap: a directory and an empty gzip are invalid input with a clear code, never internal', async () => {
    const dir = await runHeapcap(['analyze', work.path]);
    assert.equal(dir.code, EXIT.usage, dir.stderr);
    assert.match(dir.stderr, /^(built dist\/heapcap\.mjs\n)?invalid_input: .* is a directory, not a snapshot file\n {2}check: pass the path of a \.heapsnapshot/);
    assert.doesNotMatch(dir.stderr, /internal|at .*\.ts:\d+/);
    // `printf '' | gzip`: 20 bytes whose trailer says 0 bytes; not 4 GiB, and not a snapshot.
    const empty = join(work.path, 'empty.heapsnapshot.gz');
    await writeFile(empty, gzipSync(Buffer.alloc(0)));
    for (const args of [['analyze', empty], ['diff', empty, empty]]) {
      const res = await runHeapcap(args);
      assert.equal(res.code, EXIT.snapshot, `${args.join(' ')}: ${res.stderr}`);
      assert.match(res.stderr, /^(built dist\/heapcap\.mjs\n)?snapshot_invalid: not a valid heap snapshot at byte 0: /);
      assert.doesNotMatch(res.stderr, /analysis_too_large|4294967296/);
    }
    // A small snapshot gzipped stays analysable under a limit close to its real size.
    const gz = join(work.path, 'small-limit.heapsnapshot.gz');
    const bytes = await readFile(small);
    await writeFile(gz, gzipSync(bytes));
    const ok = await analyze([gz, '--max-bytes', String(bytes.length), '--json']);
    assert.equal(ok.code, EXIT.ok, ok.stderr);
  });

  void test('diff of two files starts with suspects: Order, held by the global array, with its path', async () => {
    const res = await diff([small, large, '--json']);
    assert.equal(res.code, EXIT.ok, res.stderr);
    const d = SummaryDiffSchema.parse(JSON.parse(res.stdout));
    assert.deepEqual(Object.keys(d).slice(0, 2), ['schemaVersion', 'suspects']);
    assert.equal(d.suspects.mode, 'graph');
    const top = d.suspects.suspects[0];
    const expected = heapHolderShape(4).orders - heapHolderShape(2).orders;
    assert.equal(top?.class, 'Order', JSON.stringify(d.suspects.suspects.slice(0, 3)));
    assert.deepEqual(top.parts?.map((p) => [p.role, p.class, p.countDelta]), [['gained', 'Order', expected], ['brought', 'LineItem', 4 * expected]], 'its LineItems are parts of it, not a row of their own');
    assert.equal(top.countDelta, expected);
    assert.ok(top.path?.some((s) => s.edge === '__heapcapHeld'), 'the path goes through the global holding the orders');
    const text = await diff([small, large, '--top', '3']);
    assert.match(text.stdout, /\n\nsuspects, largest new retained memory first:\n {2}1\. \+[\d,]+ elements in `orders` \(Array\): [\d,]+ Order \(\+[\d.]+ [KM]iB\), [\d,]+ LineItem \(\+[\d.]+ [KM]iB\)[^\n]*\n(?: {6}[^\n]*\n)* {6}path: __heapcapHeld \(Object\) → orders \(Array\) → Order\n/);
    // The whole path (V8's roots and indexes) one flag away.
    assert.match((await diff([small, large, '--top', '3', '--verbose'])).stdout, /\n {6}\(root\) → .*\.__heapcapHeld Object → \.orders Array → \[\d+\] Order\n/);
    const summaryOnly = SummaryDiffSchema.parse(JSON.parse((await diff([small, large, '--json', '--summary-only'])).stdout));
    // Without the graph: application classes above the strings that grew more, but no holders and no folding.
    assert.equal(summaryOnly.suspects.mode, 'summary');
    assert.deepEqual(summaryOnly.suspects.suspects.slice(0, 2).map((s) => [s.class, s.kind, s.holder]), [['LineItem', 'application', null], ['Order', 'application', null]]);
    // The first answer, before any analysis, names the class on every suspect line (issue 37).
    const summaryText = (await diff([small, large, '--summary-only'])).stdout;
    const lines = summaryText.split('\n').filter((l) => /^ {0,2}\d+\. /.test(l) && summaryText.indexOf(l) < summaryText.indexOf('\nclasses,'));
    assert.equal(lines.length, summaryOnly.suspects.suspects.length, summaryText);
    summaryOnly.suspects.suspects.forEach((s, i) => assert.ok(lines[i]?.includes(`${s.countDelta >= 0 ? '+' : '-'}${Math.abs(s.countDelta).toLocaleString('en-US')} ${s.class} (`), `${lines[i]} names ${s.class}`));
    assert.ok(lines.length >= 2, summaryText);
    const tooLarge = SummaryDiffSchema.parse(JSON.parse((await diff([small, large, '--json', '--max-bytes', '1000'])).stdout));
    assert.equal(tooLarge.suspects.mode, 'summary');
    assert.match(tooLarge.suspects.note ?? '', /^summary-only: .* above the analysis limit of 1000/);
  });

  void test('diff --json: Order grows by exactly the orders added; text shows the top growers', async () => {
    const res = await diff([small, large, '--json']);
    assert.equal(res.code, EXIT.ok, res.stderr);
    const d = SummaryDiffSchema.parse(JSON.parse(res.stdout));
    const expected = heapHolderShape(4).orders - heapHolderShape(2).orders;
    assert.equal(d.classes.find((c) => c.name === 'Order')?.countDelta, expected);
    assert.equal(d.classes.find((c) => c.name === 'LineItem')?.countDelta, 4 * expected);
    const text = await diff([small, large, '--top', '5']);
    assert.equal(text.code, EXIT.ok, text.stderr);
    assert.match(text.stdout, /^base {2}.*small\.heapsnapshot: [\d,]+ nodes/);
    assert.match(text.stdout, /classes, largest self-size growth first \(5 of \d+ changed\):/);
    assert.match(text.stdout, /\n {2}LineItem +grown +[\d,]+ +\+[\d,]+ /);
    const withRetained = await diff([small, large, '--json', '--retained']);
    assert.equal(SummaryDiffSchema.parse(JSON.parse(withRetained.stdout)).retained, true);
  });
});
