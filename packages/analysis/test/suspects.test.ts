/**
 * Leak suspects on real targets: five leak shapes of a Node service, the same
 * five in a Chromium page (Chromium's newer V8 names scopes and keeps
 * listeners in Blink's heap) and detached DOM in Chromium. For each, two snapshots around the leak (with
 * garbage made and dropped in between): the diff's first suspect is the
 * leaking class (or the closures holding it) with the exact count delta and a
 * path through the real holder; the garbage never appears.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { runHeapcapHere, startChromium, startNodeTarget, tmpDir, type Chromium, type NodeTarget, type TmpDir } from '@heapcap/testkit';
import { analyzeSnapshotFile, diffSummaries, formatPath, summarizeFile, SummaryDiffSchema, type Suspect, type SummaryDiff } from '../src/index.ts';
import { captureWithCli, writeSnapshot } from './helpers.ts';

const N = 3000;
const GARBAGE = 4000;
const MAX_BYTES = 1e9;

async function diffFiles(base: string, head: string): Promise<SummaryDiff> {
  const [baseAnalysis, headAnalysis] = [await analyzeSnapshotFile(base, { maxBytes: MAX_BYTES }), await analyzeSnapshotFile(head, { maxBytes: MAX_BYTES })];
  assert.equal(headAnalysis.groups?.some((g) => g.class === 'Garbage' || g.class === 'Transient'), false, 'garbage is never grouped');
  return SummaryDiffSchema.parse(diffSummaries(await summarizeFile(base), await summarizeFile(head), { baseAnalysis, headAnalysis }));
}

/** The path as (edge, class) pairs, for matching a holder step. */
const steps = (s: Suspect): string[] => (s.path ?? []).map((p) => `${p.edge} ${p.class}`);

/** The diff's one suspect: a leak is one suspect (its parts under one holder), and nothing else passes the significance rule. */
function first(diff: SummaryDiff): Suspect {
  assert.equal(diff.suspects.mode, 'graph');
  const top = diff.suspects.suspects[0];
  const table = diff.suspects.suspects.map((s) => `${s.rank}. ${s.class} ${s.countDelta} ${s.retainedSizeDelta} ${s.reason}`).join('\n');
  assert.ok(top !== undefined, 'no suspects');
  assert.equal(diff.suspects.suspects.length, 1, table);
  assert.equal(diff.suspects.suspects.find((s) => /Garbage|Transient/.test(s.class)), undefined, table);
  return top;
}

void describe('suspects: Node leak shapes', { timeout: 600_000 }, () => {
  let work: TmpDir;
  let target: NodeTarget;
  let previous = '';
  let k = 0;

  before(async () => {
    work = await tmpDir('heapcap-suspects');
    target = await startNodeTarget({ script: fileURLToPath(new URL('./fixtures/shapes-target.cjs', import.meta.url)), inspect: false });
    previous = await writeSnapshot(target, join(work.path, 'base.heapsnapshot'));
  });
  after(async () => {
    await target?.kill();
    await work?.cleanup();
  });

  /** Grows one shape by N, makes and drops garbage, snapshots; the diff since the previous snapshot. */
  async function grow(command: string, reply: string): Promise<Suspect> {
    await target.request(`${command} ${N}`, reply);
    await target.request(`garbage ${GARBAGE}`, 'GARBAGE');
    const next = await writeSnapshot(target, join(work.path, `s${++k}.heapsnapshot`));
    const diff = await diffFiles(previous, next);
    previous = next;
    return first(diff);
  }

  void test('a Map cache of records: the record class, held by `sessions` (Map)', async () => {
    const top = await grow('map', 'MAP');
    assert.equal(top.class, 'SessionRecord', top.reason);
    assert.equal(top.kind, 'application');
    assert.equal(top.countDelta, N);
    assert.deepEqual(top.holder && { class: top.holder.class, edge: top.holder.edge }, { class: 'Map', edge: 'sessions' });
    // Its fields (strings, Date, Buffer, Object) are folded into it, not rows of their own.
    assert.ok((top.retainedSizeDelta ?? 0) > top.selfSizeDelta * 2, JSON.stringify(top));
    const path = steps(top);
    assert.equal(path.at(-3), 'sessions Map', formatPath(top.path ?? []));
    assert.equal(top.path?.at(-1)?.class, 'SessionRecord');
    // The holder in words: the variable and the script declaring it.
    assert.match(top.reason, /^\+3,000 entries in `sessions` \(Map\), a module variable of fixtures\/shapes-target\.cjs: 3,000 SessionRecord \(\+[\d.]+ [KM]iB\), /);
    // The keys and the Map's table are parts of the same suspect.
    assert.match(top.reason, /3,000 keys \(\+[\d.]+ KiB\)/);
    assert.match(top.reason, /table \+[\d.]+ KiB/);
    assert.deepEqual(top.container, { class: 'Map', name: 'sessions', owner: null, scope: 'module', script: 'fixtures/shapes-target.cjs' });
    assert.deepEqual(top.parts?.filter((p) => p.role === 'holder').map((p) => p.class), ['Map']);
    // The path in the application's own names (the whole one stays in `path`).
    assert.equal(top.shortPath, 'sessions (Map) → SessionRecord', formatPath(top.path ?? []));
  });

  void test('an array of closures capturing request objects: the requests, held by the closures in `handlers`', async () => {
    const top = await grow('closures', 'CLOSURES');
    assert.equal(top.class, 'IncomingRequest', top.reason);
    assert.equal(top.countDelta, N);
    assert.deepEqual(top.holder?.within, { class: 'Array', edge: 'handlers' });
    const path = steps(top);
    assert.ok(path.includes('handlers Array'), formatPath(top.path ?? []));
    assert.equal(top.path?.at(-2)?.class, 'system / Context');
    assert.equal(top.path?.at(-3)?.class, '(closure)');
    // The closures and the Array's backing store are parts of the same suspect.
    assert.match(top.reason, /^\+3,000 elements in `handlers` \(Array\), a module variable of fixtures\/shapes-target\.cjs: 3,000 IncomingRequest \(\+[\d.]+ KiB\), 3,000 \(closure\) \(\+[\d.]+ KiB\), backing store \+/);
    assert.deepEqual(top.container, { class: 'Array', name: 'handlers', owner: null, scope: 'module', script: 'fixtures/shapes-target.cjs' });
    // (Node 22 reaches the captured variable by a context slot number, Node 20 by its name.)
    assert.match(top.shortPath ?? '', /^handlers \(Array\) → (?:IncomingRequest|req \(IncomingRequest\))$/, formatPath(top.path ?? []));
  });

  void test('EventEmitter listeners never removed: the listeners, held by the `tick` listener array of `bus`', async () => {
    const top = await grow('listeners', 'LISTENERS');
    assert.equal(top.class, '(closure)', top.reason);
    assert.equal(top.countDelta, N);
    assert.deepEqual(top.holder && { class: top.holder.class, edge: top.holder.edge }, { class: 'Array', edge: 'tick' });
    const path = steps(top);
    assert.deepEqual(path.slice(-4, -1), ['bus EventEmitter', '_events Object', 'tick Array'], formatPath(top.path ?? []));
    assert.match(top.reason, /^\+3,000 elements in `tick` \(Array\) of `bus` \(EventEmitter\), a module variable of fixtures\/shapes-target\.cjs: 3,000 \(closure\)/);
  });

  void test('a string grown by concatenation: one (concatenated string), held by the variable `log`', async () => {
    const top = await grow('concat', 'CONCAT');
    assert.equal(top.class, '(concatenated string)', top.reason);
    assert.equal(top.countDelta, 1);
    assert.equal(top.holder?.via, 'log');
    assert.equal(steps(top).at(-1), 'log (concatenated string)');
    // N lines of ~20 characters: the whole rope is one suspect.
    assert.ok((top.retainedSizeDelta ?? 0) > N * 20, JSON.stringify(top));
  });

  void test('a Set of Buffers: the Buffers, held by `pool` (Set)', async () => {
    const top = await grow('buffers', 'BUFFERS');
    assert.equal(top.class, 'Buffer', top.reason);
    assert.equal(top.countDelta, N);
    assert.deepEqual(top.holder && { class: top.holder.class, edge: top.holder.edge }, { class: 'Set', edge: 'pool' });
    assert.ok((top.retainedSizeDelta ?? 0) >= N * 1024, 'the 1 KiB backing stores are folded into their Buffers');
    assert.equal(steps(top).at(-3), 'pool Set');
  });

  void test('a listener per connection on an EventEmitter: one suspect, the Connections and the closures keeping them, in `message` (Array) of `hub`', async () => {
    const top = await grow('conns', 'CONNS');
    assert.equal(top.class, 'Connection', top.reason);
    assert.equal(top.countDelta, N);
    assert.deepEqual(top.container, { class: 'Array', name: 'message', owner: { class: 'EventEmitter', name: 'hub' }, scope: 'module', script: 'fixtures/shapes-target.cjs' });
    assert.deepEqual(top.parts?.map((p) => [p.role, p.class, p.countDelta]).slice(0, 2), [['brought', 'Connection', N], ['gained', '(closure)', N]]);
    assert.match(top.reason, /^\+3,000 elements in `message` \(Array\) of `hub` \(EventEmitter\), a module variable of fixtures\/shapes-target\.cjs: 3,000 Connection/);
  });

  void test('a timer per connection: one suspect, the Timeouts and the Connections their callbacks keep', async () => {
    const top = await grow('timers', 'TIMERS');
    assert.equal(top.class, 'Timeout', top.reason);
    assert.equal(top.countDelta, N);
    assert.equal(top.container?.class, 'TimersList', top.reason);
    assert.deepEqual(top.parts?.map((p) => [p.class, p.countDelta]), [['Timeout', N], ['Connection', N]]);
  });

  void test('a promise never settled: one suspect, the suspended async calls and their requests, in `never`', async () => {
    const top = await grow('pending', 'PENDING');
    assert.equal(top.countDelta, N, top.reason);
    assert.deepEqual(top.container, { class: 'system / Context', name: 'never', owner: null, scope: 'module', script: 'fixtures/shapes-target.cjs' });
    assert.deepEqual(
      top.parts?.filter((p) => p.countDelta > 0).map((p) => [p.class, p.countDelta]),
      [['Generator', N], ['PendingRequest', N]],
    );
    assert.match(top.reason, /^\+3,000 Generator in `never`, a module variable of fixtures\/shapes-target\.cjs: .*Promise grew \+[\d.]+ KiB/);
  });

  void test('garbage made and dropped, nothing kept: no suspect, "nothing grew beyond noise" in the CLI', async () => {
    await target.request(`garbage ${GARBAGE}`, 'GARBAGE');
    const next = await writeSnapshot(target, join(work.path, `s${++k}.heapsnapshot`));
    const diff = await diffFiles(previous, next);
    assert.deepEqual(diff.suspects.suspects.map((s) => s.reason), []);
    assert.equal(diff.suspects.mode, 'graph');
    // The same two files through the CLI, analyses included (text output).
    const cli = await runHeapcapHere(['diff', previous, next], { timeoutMs: 300_000 });
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /suspects, largest new retained memory first:\n {2}none: nothing grew beyond noise\n/);
    previous = next;
  });
});

void describe('suspects: detached DOM in Chromium', { timeout: 600_000 }, () => {
  let chromium: Chromium | undefined;
  let work: TmpDir;
  before(async () => {
    work = await tmpDir('heapcap-suspects-dom');
    chromium = await startChromium();
  });
  after(async () => {
    await chromium?.close();
    await work?.cleanup();
  });

  void test('detached rows kept by a JS array: the `<tr>` elements, held by `detachedRows` (Array)', async () => {
    const page = await chromium!.openPage(`data:text/html,${encodeURIComponent('<title>heapcap test page</title><body><p>suspects</p></body>')}`);
    const cli = ['--chromium', `127.0.0.1:${chromium!.port}`, '--url-pattern', '^data:'];
    const base = await captureWithCli(cli, join(work.path, 'base'));
    const { result, exceptionDetails } = await evaluateInPage(
      page.webSocketDebuggerUrl,
      `(() => {
        window.detachedRows = window.detachedRows || [];
        const table = document.createElement('table');
        document.body.appendChild(table);
        for (let i = 0; i < ${N}; i++) { const tr = document.createElement('tr'); tr.className = 'row'; table.appendChild(tr); window.detachedRows.push(tr); }
        table.remove();
        let garbage = [];
        for (let i = 0; i < ${GARBAGE}; i++) garbage.push(document.createElement('section'));
        garbage = null;
        return window.detachedRows.length;
      })()`,
    );
    assert.equal(exceptionDetails, undefined);
    assert.equal(result.value, N);
    const head = await captureWithCli(cli, join(work.path, 'head'));
    const diff = await diffFiles(base, head);
    const top = first(diff);
    const table = diff.suspects.suspects.map((s) => `${s.rank}. ${s.class} ${s.countDelta} ${s.reason}`).join('\n');
    assert.equal(top.class, '<tr>', table);
    assert.equal(top.kind, 'application');
    assert.equal(top.countDelta, N, table);
    assert.deepEqual(top.holder && { class: top.holder.class, edge: top.holder.edge }, { class: 'Array', edge: 'detachedRows' }, table);
    // Out of the document, and said so: the trees and the detached nodes they hold (the removed table among them).
    assert.equal(top.detached?.trees, N, table);
    assert.ok((top.detached?.nodes ?? 0) >= N, table);
    assert.match(top.reason, /^\+3,000 detached <tr> trees in `detachedRows` \(Array\) \([\d,]+ detached nodes\)/, table);
    assert.equal(diff.suspects.suspects.find((s) => /section/i.test(s.class)), undefined, table);
    assert.equal(diff.suspects.suspects.find((s) => s.class.includes('::')), undefined, `Blink's C++ internals are not suspects\n${table}`);
  });
});

void describe('suspects: the same shapes in a Chromium page', { timeout: 600_000 }, () => {
  let chromium: Chromium | undefined;
  let work: TmpDir;
  let wsUrl = '';
  let cli: string[] = [];
  let previous = '';
  let k = 0;
  before(async () => {
    work = await tmpDir('heapcap-suspects-page');
    chromium = await startChromium();
    const html = await readFile(fileURLToPath(new URL('./fixtures/shapes-page.html', import.meta.url)), 'utf8');
    const page = await chromium.openPage(`data:text/html,${encodeURIComponent(html)}`);
    wsUrl = page.webSocketDebuggerUrl;
    cli = ['--chromium', `127.0.0.1:${chromium.port}`, '--url-pattern', '^data:'];
    previous = await captureWithCli(cli, join(work.path, 'base'));
  });
  after(async () => {
    await chromium?.close();
    await work?.cleanup();
  });

  /** Grows one shape by N in the page, makes and drops garbage, captures; the diff since the previous capture. */
  async function grow(shape: string): Promise<{ top: Suspect; table: string }> {
    const { result, exceptionDetails } = await evaluateInPage(wsUrl, `shapes.${shape}(${N}) > 0 && shapes.garbage(${GARBAGE}) === ${GARBAGE}`);
    assert.equal(exceptionDetails, undefined);
    assert.equal(result.value, true);
    const next = await captureWithCli(cli, join(work.path, `s${++k}`));
    const diff = await diffFiles(previous, next);
    previous = next;
    const table = diff.suspects.suspects.map((s) => `${s.rank}. ${s.class} ${s.countDelta} ${s.retainedSizeDelta} ${s.reason} | ${formatPath(s.path ?? [])}`).join('\n');
    assert.equal(diff.suspects.suspects.find((s) => s.class.includes('::')), undefined, `Blink's C++ internals are not suspects\n${table}`);
    return { top: first(diff), table };
  }

  void test('a Map cache of records: the record class, held by `sessions` (Map)', async () => {
    const { top, table } = await grow('map');
    assert.equal(top.class, 'SessionRecord', table);
    assert.equal(top.countDelta, N, table);
    assert.deepEqual(top.holder && { class: top.holder.class, edge: top.holder.edge }, { class: 'Map', edge: 'sessions' }, table);
    assert.ok((top.retainedSizeDelta ?? 0) > top.selfSizeDelta * 2, 'its fields are folded into it');
    assert.equal(steps(top).at(-3), 'sessions Map', formatPath(top.path ?? []));
  });

  void test('an array of closures capturing request objects: the requests, held by the closures in `handlers`', async () => {
    const { top, table } = await grow('closures');
    assert.equal(top.class, 'IncomingRequest', table);
    assert.equal(top.countDelta, N, table);
    assert.deepEqual(top.holder?.within, { class: 'Array', edge: 'handlers' }, table);
    assert.ok(steps(top).includes('handlers Array'), formatPath(top.path ?? []));
    assert.equal(top.holder?.via, 'req', table);
    // A page's script is a data: URL: the variable is named without it.
    assert.match(top.reason, /^\+3,000 elements in `handlers` \(Array\)(?:, a module variable)?: 3,000 IncomingRequest/);
  });

  void test('listeners never removed (EventTarget): the listeners, held by `bus` (EventTarget)', async () => {
    const { top, table } = await grow('listeners');
    // Blink keeps a JS listener in a V8EventListener of the target's listener list: that is the unit, the function folded into it.
    assert.equal(top.class, 'EventListener', table);
    assert.equal(top.countDelta, N, table);
    assert.deepEqual(top.holder && { class: top.holder.class, edge: top.holder.edge }, { class: 'EventTarget', edge: 'bus' }, table);
    assert.ok(steps(top).includes('bus EventTarget'), formatPath(top.path ?? []));
  });

  void test('a string grown by concatenation: one (concatenated string), held by the variable `log`', async () => {
    const { top, table } = await grow('concat');
    assert.equal(top.class, '(concatenated string)', table);
    assert.equal(top.countDelta, 1, table);
    assert.equal(top.holder?.via, 'log', table);
    assert.equal(steps(top).at(-1), 'log (concatenated string)');
    assert.ok((top.retainedSizeDelta ?? 0) > N * 20, JSON.stringify(top));
  });

  void test('a Set of typed arrays: the Uint8Arrays, held by `pool` (Set)', async () => {
    const { top, table } = await grow('buffers');
    assert.equal(top.class, 'Uint8Array', table);
    assert.equal(top.countDelta, N, table);
    assert.deepEqual(top.holder && { class: top.holder.class, edge: top.holder.edge }, { class: 'Set', edge: 'pool' }, table);
    assert.ok((top.retainedSizeDelta ?? 0) >= N * 1024, 'the 1 KiB backing stores are folded into their arrays');
    assert.equal(steps(top).at(-3), 'pool Set');
  });
});

/** One `Runtime.evaluate` (by value) on a page's own inspector WebSocket (Node 22's global WebSocket), then the socket is closed. */
async function evaluateInPage(wsUrl: string, expression: string): Promise<{ result: { value?: unknown }; exceptionDetails?: unknown }> {
  const ws = new WebSocket(wsUrl);
  try {
    await new Promise<void>((resolve, reject) => {
      ws.addEventListener('open', () => resolve(), { once: true });
      ws.addEventListener('error', () => reject(new Error(`cannot open ${wsUrl}`)), { once: true });
    });
    const answer = new Promise<{ result: { result: { value?: unknown }; exceptionDetails?: unknown } }>((resolve, reject) => {
      ws.addEventListener('message', (ev) => {
        const msg = JSON.parse(String(ev.data)) as { id?: number; result?: { result: { value?: unknown }; exceptionDetails?: unknown }; error?: { message: string } };
        if (msg.id !== 1) return;
        if (msg.error !== undefined || msg.result === undefined) reject(new Error(`Runtime.evaluate failed: ${msg.error?.message ?? 'no result'}`));
        else resolve({ result: msg.result });
      });
      ws.addEventListener('close', () => reject(new Error('the page closed its inspector socket')), { once: true });
    });
    ws.send(JSON.stringify({ id: 1, method: 'Runtime.evaluate', params: { expression, returnByValue: true } }));
    const { result } = await answer;
    return result;
  } finally {
    ws.close();
  }
}
