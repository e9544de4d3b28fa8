/**
 * Bad input to `heapcap capture`: each case exits with its documented code,
 * prints `code: message` and a `  check:` hint on stderr, and writes nothing
 * under --out. Real sockets stand in for the wrong things an operator points
 * heapcap at (a closed port, a web app, a non-HTTP service).
 */
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { freePort, tmpDir, type TmpDir } from '@heapcap/testkit';
import { EXIT } from '../src/exit-codes.ts';
import { listFiles, runCli } from './cli-harness.ts';

/** Listens on 127.0.0.1:0 and returns the port. */
async function listen(server: HttpServer | TcpServer): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

/** Closes a server and every connection it still holds. */
async function close(server: HttpServer | TcpServer, sockets: Set<Socket>): Promise<void> {
  for (const s of sockets) s.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** Runs the CLI with `args` + a fresh --out, checks code, stderr shape and that nothing was written; returns stderr. */
async function expectFailure(work: TmpDir, name: string, args: string[], exit: number, code: string): Promise<string> {
  const out = `${work.path}/${name}`;
  const res = await runCli([...args, '--out', out]);
  assert.equal(res.code, exit, `exit code; stderr:\n${res.stderr}`);
  const [first, second] = res.stderr.split('\n');
  assert.ok(first?.startsWith(`${code}: `), `first stderr line: ${first}`);
  assert.match(second ?? '', /^ {2}check: \S/, 'a hint line says what to check');
  if (args.includes('--json')) {
    const printed = JSON.parse(res.stdout) as { error: { code: string; hint?: string } };
    assert.equal(printed.error.code, code, '--json prints the error on stdout');
    assert.ok(printed.error.hint !== undefined && printed.error.hint !== '', 'with its hint');
  } else {
    assert.equal(res.stdout, '', 'nothing on stdout without --json');
  }
  assert.deepEqual(await listFiles(out), [], 'nothing written under --out');
  return res.stderr;
}

void describe('bad input', { timeout: 120_000, concurrency: 3 }, () => {
  let work: TmpDir;
  const sockets = new Set<Socket>();
  const track = (s: Socket): void => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  };
  // A web app: HTTP, but /json/list is a 404.
  const web = createHttpServer((_req, res) => res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n'));
  // An SSH-like service: answers with a banner that is not HTTP.
  const banner = createTcpServer((s) => {
    track(s);
    s.end('SSH-2.0-OpenSSH_9.6\r\n');
  });
  // A service that accepts and drops every connection.
  const dropper = createTcpServer((s) => {
    track(s);
    s.destroy();
  });
  web.on('connection', track);
  const ports = { web: 0, banner: 0, dropper: 0 };

  before(async () => {
    work = await tmpDir('heapcap-cli-bad-input');
    ports.web = await listen(web);
    ports.banner = await listen(banner);
    ports.dropper = await listen(dropper);
  });
  after(async () => {
    await Promise.all([close(web, sockets), close(banner, sockets), close(dropper, sockets)]);
    await work?.cleanup();
  });

  void test('a closed port → target_unreachable (exit 3)', async () => {
    const port = await freePort();
    const stderr = await expectFailure(work, 'closed', ['--node', `127.0.0.1:${port}`, '--json'], EXIT.target, 'target_unreachable');
    assert.match(stderr, /ECONNREFUSED/);
    assert.match(stderr, /check: .*--inspect/);
  });

  void test('an HTTP server that is not an inspector → target_not_found (exit 3)', async () => {
    const stderr = await expectFailure(work, 'web', ['--node', `127.0.0.1:${ports.web}`, '--json'], EXIT.target, 'target_not_found');
    assert.match(stderr, /HTTP 404/);
    assert.match(stderr, /check: check the port/);
  });

  void test('a TCP service that speaks no HTTP → target_not_found (exit 3)', async () => {
    const stderr = await expectFailure(work, 'banner', ['--node', `127.0.0.1:${ports.banner}`], EXIT.target, 'target_not_found');
    assert.match(stderr, /did not answer like a V8 inspector/);
  });

  void test('a TCP service that drops the connection → target_unreachable, not a silent exit 0', async () => {
    // Regression: Node 20's fetch never settled here and the CLI exited 0 with no output.
    // Discovery now uses node:http, which sees the reset at once.
    const stderr = await expectFailure(work, 'dropper', ['--node', `127.0.0.1:${ports.dropper}`], EXIT.target, 'target_unreachable');
    assert.match(stderr, /cannot reach an inspector at 127\.0\.0\.1:\d+ \(ECONNRESET\)/);
  });

  void test('bad flags → invalid_input (exit 2)', async () => {
    const cases: string[][] = [
      ['--node', '127.0.0.1:9229', '--no-such-flag'],
      [],
      ['--node', '127.0.0.1:9229', '--pid', '1'],
      ['--node', '127.0.0.1:9229', '--port', '9229'],
      ['--node', 'not-a-host-port'],
      ['--pid', 'abc'],
      ['--node', '127.0.0.1:9229', '--memory-ceiling', '0'],
      ['--node', '127.0.0.1:9229', '--warm', '--no-warm'],
    ];
    await Promise.all(cases.map((args, i) => expectFailure(work, `flags-${i}`, args, EXIT.usage, 'invalid_input')));
  });

  void test('an invalid regular expression → invalid_input (exit 2) before any connection is tried', async () => {
    // The port is closed: reporting target_unreachable here would mean the input was checked too late.
    const port = await freePort();
    const stderr = await expectFailure(work, 'regex', ['--chromium', `127.0.0.1:${port}`, '--url-pattern', 'shop('], EXIT.usage, 'invalid_input');
    assert.match(stderr, /--url-pattern "shop\(" is not a valid regular expression/);
  });
});
