/**
 * The watcher's memory sampler against real targets: a Node.js target (heap
 * used and limit, RSS; one connection for many samples in persistent mode, one
 * per sample otherwise; nothing left behind in the target) on Node 18 (the
 * inspector's require), the machine's Node and Node 22, and a Chromium page
 * (the renderer's heap limit, no RSS).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CdpSession, MemorySampler } from '../src/index.ts';
import { fixturePath, startChromium, startNodeTarget, startPageServer, type Chromium, type NodeTarget, type NodeVersion, type PageServer } from '@heapcap/testkit';

const SESSION = { connectTimeoutMs: 10_000, commandTimeoutMs: 30_000 };
const TIMEOUTS = { connectMs: 10_000, commandMs: 30_000 };

const FOOTPRINT = `JSON.stringify({ globals: Object.getOwnPropertyNames(globalThis).sort(),
  listeners: process.eventNames().map((n) => String(n) + ':' + process.listenerCount(n)).sort(), lastMatch: RegExp.lastMatch })`;

async function evaluate(wsUrl: string, expression: string): Promise<unknown> {
  const s = await CdpSession.connect(wsUrl, SESSION);
  try {
    return (await s.send('Runtime.evaluate', { expression, returnByValue: true })).result.value;
  } finally {
    await s.close();
  }
}

void describe('memory sampler', () => {
  const targets: NodeTarget[] = [];
  after(async () => {
    await Promise.all(targets.map((t) => t.kill('SIGKILL')));
  });

  for (const node of ['18', 'system', '22'] as NodeVersion[]) {
    void it(`Node ${node}: heap used, heap limit and RSS; persistent mode keeps one connection; nothing left behind`, async () => {
      const t = await startNodeTarget({ node, script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '10' }, nodeFlags: ['--max-old-space-size=96', '--max-semi-space-size=1'] });
      targets.push(t);
      const before = await evaluate(t.wsUrl!, FOOTPRINT);
      const persistent = new MemorySampler({ kind: 'node', inspect: `127.0.0.1:${t.port}` }, 'persistent', TIMEOUTS);
      const samples = [];
      for (let i = 0; i < 3; i++) samples.push(await persistent.sample());
      await persistent.close();
      assert.equal(persistent.connects, 1, 'one session for three samples');
      for (const s of samples) {
        assert.equal(s.heapLimitBytes, 99 * 1024 * 1024, 'heap_size_limit of --max-old-space-size=96 --max-semi-space-size=1');
        assert.ok(s.heapUsedBytes > 10e6 && s.heapUsedBytes <= s.heapTotalBytes, `heap used ${s.heapUsedBytes}`);
        assert.ok(s.rssBytes !== null && s.rssBytes > s.heapUsedBytes, `rss ${s.rssBytes}`);
      }
      const perSample = new MemorySampler({ kind: 'node', ws: t.wsUrl! }, 'per-sample', TIMEOUTS);
      for (let i = 0; i < 3; i++) await perSample.sample();
      assert.equal(perSample.connects, 3, 'a session per sample');
      assert.equal(await evaluate(t.wsUrl!, FOOTPRINT), before, 'no global, listener or RegExp match left in the target');
    });
  }

  void describe('chromium page', () => {
    let browser: Chromium | undefined;
    let server: PageServer | undefined;
    before(async () => {
      server = await startPageServer();
      browser = await startChromium();
      await browser.openPage(server.url('/app/leaky?mb=5'));
    });
    after(async () => {
      await browser?.close();
      await server?.close();
    });

    void it("the renderer's heap limit, no RSS", async () => {
      const sampler = new MemorySampler({ kind: 'chromium', browser: `127.0.0.1:${browser!.port}`, select: { urlPattern: 'leaky' } }, 'persistent', TIMEOUTS);
      try {
        const s = await sampler.sample();
        assert.ok(s.heapLimitBytes !== null && s.heapLimitBytes > 100e6, `limit ${s.heapLimitBytes}`);
        assert.ok(s.heapUsedBytes > 1e6, `used ${s.heapUsedBytes}`);
        assert.equal(s.rssBytes, null);
      } finally {
        await sampler.close();
      }
    });
  });
});
