/**
 * A target that does not see the pipe directory (here the stub inspector,
 * which answers the directory probe as a target on another host would) is
 * probed once and then remembered: the next capture of the same target sends
 * one `Runtime.evaluate` fewer and goes over CDP for the same reason. Another
 * target, or the same one with another pipe directory, is probed again.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { after, before, test } from 'node:test';
import { startStubInspector, tmpDir, type StubInspector, type TmpDir } from '@heapcap/testkit';
import { captureHeapSnapshot } from '../src/index.ts';

let stub: StubInspector;
let dirs: TmpDir[] = [];
before(async () => {
  stub = await startStubInspector();
  dirs = [await tmpDir('heapcap-pipe-memory-a'), await tmpDir('heapcap-pipe-memory-b')];
});
after(async () => {
  await stub?.close();
  for (const d of dirs) await d.cleanup();
});

/** One capture over `transport: auto`: the evaluations the target answered, and why the snapshot went over CDP. */
async function capture(id: string, pipeDir: string): Promise<{ evaluates: number; reason: string }> {
  const count = (): number => stub.stats().methods['Runtime.evaluate'] ?? 0;
  const before = count();
  const result = await captureHeapSnapshot({ endpoint: { kind: 'node', ws: stub.wsUrl(id) }, transport: 'auto', pipeDir }, (snapshot) =>
    pipeline(snapshot, new Writable({ write: (_chunk, _enc, done) => done() })),
  );
  assert.equal(result.transport.used, 'cdp');
  return { evaluates: count() - before, reason: result.transport.reason };
}

void test('a target that does not share the pipe directory is probed once, then remembered', async () => {
  const [a, b] = dirs.map((d) => d.path) as [string, string];
  const first = await capture('one', a);
  assert.match(first.reason, /does not share/);
  const again = await capture('one', a);
  assert.equal(again.reason, first.reason);
  assert.equal(again.evaluates, first.evaluates - 1, 'the second capture skipped the directory probe');
  // Keyed by target and directory: neither another target nor another directory is taken from memory.
  assert.equal((await capture('two', a)).evaluates, first.evaluates);
  assert.equal((await capture('one', b)).evaluates, first.evaluates);
});
