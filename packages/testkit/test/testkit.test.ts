import assert from 'node:assert/strict';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { after, describe, test } from 'node:test';
import {
  PAGE_TITLE,
  fixturePath,
  freePort,
  heapHolderShape,
  nodeBinary,
  peakRssKb,
  rssKb,
  startChromium,
  startNodeTarget,
  startPageServer,
  startRedis,
  tmpDir,
  v8VersionOf,
  waitFor,
  GiveUp,
} from '../src/index.ts';
import type { NodeTarget } from '../src/index.ts';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function getJson(url: string): Promise<unknown> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  assert.equal(res.status, 200, url);
  return res.json();
}

/** Sends one RESP command (inline form) and returns the raw reply, or throws on connection errors. */
function redisCommand(port: number, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.setTimeout(5_000, () => socket.destroy(new Error('redis reply timeout')));
    socket.on('error', reject);
    socket.on('connect', () => socket.write(`${line}\r\n`));
    socket.on('data', (d) => {
      socket.destroy();
      resolve(d.toString('utf8'));
    });
  });
}

void describe('node targets', { timeout: 240_000 }, () => {
  const started: NodeTarget[] = [];
  after(async () => {
    await Promise.all(started.map((t) => t.kill()));
  });

  for (const [version, v8Major] of [
    ['system', '11.'],
    ['22', '12.'],
  ] as const) {
    void test(`heap-holder on Node ${version}: inspector port, V8 ${v8Major}x, object count`, async () => {
      const bin = await nodeBinary(version);
      assert.ok((await v8VersionOf(bin)).startsWith(v8Major), `V8 of ${bin}`);
      const target = await startNodeTarget({ node: version, script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '5' } });
      started.push(target);
      assert.ok(target.port && target.port > 0);
      assert.match(target.wsUrl ?? '', new RegExp(`^ws://127\\.0\\.0\\.1:${target.port}/[0-9a-f-]{36}$`));
      const list = (await getJson(`http://127.0.0.1:${target.port}/json/list`)) as { webSocketDebuggerUrl: string }[];
      assert.equal(list.length, 1);
      assert.equal(list[0]?.webSocketDebuggerUrl, target.wsUrl);
      const expected = version === 'system' ? process.version : 'v22.';
      const info = (await getJson(`http://127.0.0.1:${target.port}/json/version`)) as { Browser: string };
      assert.ok(info.Browser.startsWith(`node.js/${expected}`), info.Browser);
      assert.match(target.stdoutText(), new RegExp(`^ORDERS ${heapHolderShape(5).orders}$`, 'm'));
      // 5 MB of retained objects on top of Node's own ~40 MB.
      assert.ok(rssKb(target.pid) > 40_000, `rss ${rssKb(target.pid)} kB`);
      assert.ok(peakRssKb(target.pid) >= rssKb(target.pid));

      await target.kill();
      assert.equal(alive(target.pid), false);
      assert.deepEqual(await target.waitExit(), { code: null, signal: 'SIGTERM' });
      await target.kill(); // idempotent
    });
  }

  void test('heap-holder.mjs answers writeHeapSnapshot and spin on stdin', async () => {
    const dir = await tmpDir('testkit-snap');
    try {
      const target = await startNodeTarget({
        script: fixturePath('heap-holder.mjs'),
        inspect: false,
        env: { HEAP_MB: '1', CPU_LOOP: '1' },
      });
      started.push(target);
      assert.equal(target.port, undefined);
      const file = `${dir.path}/t.heapsnapshot`;
      assert.match(await target.request(`writeHeapSnapshot ${file}`, 'WROTE ', 60_000), /^WROTE \d+$/);
      const head = (await readFile(file, 'utf8')).slice(0, 20);
      assert.equal(head, '{"snapshot":{"meta":');
      assert.match(await target.request('spin 2', 'SPIN ', 60_000), /^SPIN \d+\.\d$/);
      assert.match(await target.request('bogus', 'ERR ', 10_000), /^ERR bogus$/);
      await target.kill();
    } finally {
      await dir.cleanup();
    }
  });

  void test('bundle-target writes a one-line bundle and loads it', async () => {
    const dir = await tmpDir('testkit-bundle');
    try {
      const target = await startNodeTarget({
        script: fixturePath('bundle-target.cjs'),
        env: { BUNDLE_DIR: dir.path, BUNDLE_FUNCTIONS: '500' },
      });
      started.push(target);
      const line = /^BUNDLE (\S+) (\d+)$/m.exec(target.stdoutText());
      assert.equal(line?.[2], '500');
      const bundle = await readFile(line?.[1] ?? '', 'utf8');
      assert.equal(bundle.includes('\n'), false);
      assert.ok(bundle.includes('class C499{'));
      await target.kill();
    } finally {
      await dir.cleanup();
    }
  });

  void test('a target that dies before READY fails fast with its stderr', async () => {
    const dir = await tmpDir('testkit-bad');
    try {
      const script = `${dir.path}/dies.cjs`;
      await writeFile(script, `console.error('boom from fixture'); process.exit(3);`);
      const t0 = performance.now();
      await assert.rejects(startNodeTarget({ script, readyTimeoutMs: 20_000 }), /boom from fixture/);
      assert.ok(performance.now() - t0 < 10_000, 'did not wait for the deadline');
    } finally {
      await dir.cleanup();
    }
  });

  void test('a target that never prints READY is killed at the deadline', async () => {
    const dir = await tmpDir('testkit-silent');
    try {
      const script = `${dir.path}/silent.cjs`;
      await writeFile(script, `console.error('PID ' + process.pid); setInterval(() => {}, 1 << 30);`);
      const err = await startNodeTarget({ script, readyTimeoutMs: 1_500 }).then(
        () => assert.fail('resolved without READY'),
        (e: unknown) => e as Error,
      );
      assert.match(err.message, /timed out after 1500 ms waiting for READY/);
      const pid = Number(/PID (\d+)/.exec(err.message)?.[1]);
      assert.ok(pid > 0);
      assert.equal(alive(pid), false);
    } finally {
      await dir.cleanup();
    }
  });
});

void describe('chromium', { timeout: 120_000 }, () => {
  void test('opens the leaky page and lists it as a page target', async () => {
    const server = await startPageServer();
    const chromium = await startChromium();
    try {
      const version = (await getJson(`http://127.0.0.1:${chromium.port}/json/version`)) as Record<string, string>;
      assert.equal(version.webSocketDebuggerUrl, chromium.browserWsUrl);
      assert.match(version['V8-Version'] ?? '', /^\d+\.\d+\./);
      const url = server.url('/app/leaky?mb=2');
      const page = await chromium.openPage(url);
      assert.equal(page.title, PAGE_TITLE);
      const listed = (await chromium.listTargets()).filter((t) => t.url === url);
      assert.equal(listed.length, 1);
      assert.equal(listed[0]?.type, 'page');
      assert.equal(listed[0]?.webSocketDebuggerUrl, page.webSocketDebuggerUrl);
    } finally {
      await chromium.close();
      await server.close();
    }
    assert.equal(alive(chromium.pid), false);
    await assert.rejects(stat(chromium.userDataDir), { code: 'ENOENT' });
    await chromium.close(); // idempotent
  });
});

void describe('redis', { timeout: 60_000 }, () => {
  void test('starts, restarts empty on the same port, stops', async () => {
    const redis = await startRedis();
    try {
      assert.equal(redis.url, `redis://127.0.0.1:${redis.port}`);
      assert.equal(await redisCommand(redis.port, 'SET k v'), '+OK\r\n');
      assert.equal(await redisCommand(redis.port, 'GET k'), '$1\r\nv\r\n');
      await redis.restart();
      // No persistence: a restarted server is empty.
      assert.equal(await redisCommand(redis.port, 'GET k'), '$-1\r\n');
    } finally {
      await redis.stop();
    }
    await assert.rejects(redisCommand(redis.port, 'PING'), { code: 'ECONNREFUSED' });
    await redis.stop(); // idempotent
    await assert.rejects(redis.restart(), /stopped/);
  });
});

void describe('proc helpers', { timeout: 30_000 }, () => {
  void test('waitFor returns the first truthy value and names what timed out', async () => {
    let calls = 0;
    assert.equal(await waitFor(() => (++calls >= 3 ? 'yes' : undefined), { timeoutMs: 5_000, intervalMs: 10, what: 'x' }), 'yes');
    await assert.rejects(
      waitFor(() => false, { timeoutMs: 200, intervalMs: 20, what: 'the moon' }),
      /timed out after 200 ms waiting for the moon/,
    );
  });

  void test('waitFor: an ordinary error is "not yet"; a GiveUp ends the wait at once with it', async () => {
    let calls = 0;
    const flaky = (): string => {
      if (++calls < 3) throw new Error('not listening yet');
      return 'up';
    };
    assert.equal(await waitFor(flaky, { timeoutMs: 5_000, intervalMs: 10, what: 'x' }), 'up');
    calls = 0;
    // A minute's deadline: only GiveUp ending the wait lets this finish inside the test's 30 s timeout.
    const exited = (): never => {
      calls++;
      throw new GiveUp('serve exited with 2');
    };
    await assert.rejects(waitFor(exited, { timeoutMs: 60_000, intervalMs: 10, what: 'serve' }), (err: unknown) => err instanceof GiveUp && err.message === 'serve exited with 2');
    assert.equal(calls, 1, 'no second poll after a GiveUp');
  });

  void test('tmpDir cleanup removes the directory; freePort gives a bindable port', async () => {
    const dir = await tmpDir('testkit-tmp');
    await writeFile(`${dir.path}/f`, 'x');
    await dir.cleanup();
    await assert.rejects(stat(dir.path), { code: 'ENOENT' });
    const port = await freePort();
    // Below the kernel's ephemeral range, where no outgoing connection can take it before serve binds it.
    const ephemeralLow = Number((await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')).trim().split(/\s+/)[0]);
    assert.ok(port < ephemeralLow, `${port} < ${ephemeralLow}`);
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});
