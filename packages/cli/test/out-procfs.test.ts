/**
 * Issue 25, defect 8: `heapcap capture --out /proc/nope` spun at 100 % CPU for
 * ever, deaf to SIGINT and SIGTERM: Node's recursive mkdir never returns
 * under procfs (every mkdir there answers ENOENT, so it creates the parent,
 * which exists, and tries again). Through `bin/heapcap`, as users run it,
 * against a stub inspector: it must end promptly with storage_failed.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { runHeapcap, startStubInspector, type StubInspector } from '@heapcap/testkit';

let inspector: StubInspector;

before(async () => {
  inspector = await startStubInspector();
});
after(async () => {
  await inspector?.close();
});

void test('defect 8: capture --out /proc/nope ends with storage_failed instead of spinning', async () => {
  const started = performance.now();
  // runHeapcap kills the command and rejects past its deadline: that was the old outcome.
  const res = await runHeapcap(['capture', '--node', `127.0.0.1:${inspector.port}`, '--out', '/proc/nope/deeper'], { timeoutMs: 90_000 });
  const ms = performance.now() - started;
  assert.equal(res.code, 5, `${res.stdout}\n${res.stderr}`);
  assert.match(res.stderr, /storage_failed: .*\/proc\/nope/);
  assert.equal(inspector.stats().snapshots, 0, 'no snapshot was taken for a store that cannot hold it');
  // The bundle may be rebuilt on first use: the bound is generous, the point is that it ends.
  assert.ok(ms < 90_000, `${ms} ms`);
});
