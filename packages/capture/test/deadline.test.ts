/**
 * withDeadline counts the other side's silence, not this process's own
 * stalls: an answer that arrived while the event loop was blocked past the
 * deadline is taken. After a stall Node runs due timers before it reads its
 * sockets, so a plain timer would report a target that answered as timed out.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { withDeadline } from '../src/deadline.ts';
import { CaptureError } from '../src/errors.ts';

let echo: ChildProcess;
let socket: Socket;
const dir = mkdtempSync(join(tmpdir(), 'heapcap-deadline-'));
/** The echo server touches this once it has handed an answer to the kernel. */
const echoed = join(dir, 'echoed');

before(async () => {
  // An echo server in another process (one in this process could not answer while this thread stalls).
  const script = `const s = require('net').createServer((c) => c.on('data', (d) => c.write(d, () => require('fs').writeFileSync(process.argv[1], '')))).listen(0, '127.0.0.1', () => console.log(s.address().port))`;
  echo = spawn(process.execPath, ['-e', script, echoed], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(echo.stdout!, 'data')) as [Buffer];
  socket = createConnection({ host: '127.0.0.1', port: Number(String(line).trim()) });
  await once(socket, 'connect');
});
after(() => {
  socket?.destroy();
  echo?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** Keeps this thread busy (no I/O, no timers run meanwhile) for `ms` and until the echo is on its way. */
function stallUntilEchoed(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end || !existsSync(echoed)) {
    // busy
  }
  rmSync(echoed);
}

const timedOut = (): CaptureError => new CaptureError('protocol_timeout', 'no answer within the deadline');

void test('an answer that came while this process stalled past the deadline is taken', async () => {
  for (let i = 0; i < 3; i++) {
    const answer = withDeadline(once(socket, 'data').then(([b]) => String(b)), 100, timedOut);
    socket.write(`ping ${i}`);
    // The echo waits in the socket while this thread is busy; the deadline is long past when it is free.
    stallUntilEchoed(400);
    assert.equal(await answer, `ping ${i}`);
  }
});

void test('a side that does not answer still fails at the deadline', async () => {
  const t0 = Date.now();
  await assert.rejects(
    withDeadline(new Promise<never>(() => {}), 150, timedOut),
    (err: unknown) => err instanceof CaptureError && err.code === 'protocol_timeout',
  );
  assert.ok(Date.now() - t0 >= 140, `failed after ${Date.now() - t0} ms`);
});
