/**
 * The long range of a target's curve comes from a real Prometheus: it scrapes
 * `bin/heapcap serve`'s /metrics every second (the heapcap_target_* gauges of
 * a watched Node target), serve keeps 2 s of samples in Redis and has
 * HEAPCAP_PROMETHEUS_URL; a range longer than that is answered from
 * Prometheus' query_range, and the console's target page says so.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import puppeteer from 'puppeteer-core';
import { CHROMIUM_FLAGS, REPO_ROOT, chromiumBinary, freePort, startHeapcap, startNodeTarget, startPrometheus, startRedis, tmpDir, waitFor, type NodeTarget, type PrometheusServer, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';
import { hashToken } from '@heapcap/api';

declare const document: { querySelector(s: string): { textContent: string | null } | null };

const TOKEN = 'console-prom-reader-5c1a9e07';

interface SamplesBody {
  source: string;
  keep: number;
  items: { t: number; heapUsedBytes: number; heapTotalBytes: number; heapLimitBytes: number | null; rssBytes: number | null }[];
}

let redis: RedisServer;
let dir: TmpDir;
let target: NodeTarget;
let serve: RunningHeapcap;
let prometheus: PrometheusServer;

async function get<T>(path: string): Promise<{ status: number; body: T }> {
  const res = await fetch(`${serve.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return { status: res.status, body: (await res.json()) as T };
}

void describe('console long range from Prometheus', () => {
  before(async () => {
    redis = await startRedis();
    dir = await tmpDir('heapcap-console-prom');
    target = await startNodeTarget({ script: join(REPO_ROOT, 'packages/analysis/test/fixtures/shapes-target.cjs') });
    await writeFile(join(dir.path, 'targets.yaml'), `targets:\n  - id: shapes\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n`);
    await writeFile(join(dir.path, 'tokens.yaml'), `tokens:\n  - name: admin\n    sha256: "${hashToken(TOKEN)}"\n    scopes: [captures:read, targets:admin]\n`);
    // Prometheus first, on serve's port to be: serve needs its URL at start, and scrapes fail until serve listens.
    const port = await freePort();
    prometheus = await startPrometheus([{ url: `http://127.0.0.1:${port}/metrics` }]);
    serve = await startHeapcap(['serve'], {
      cwd: dir.path,
      timeoutMs: 180_000,
      env: {
        HEAPCAP_REDIS_URL: redis.url,
        HEAPCAP_PORT: String(port),
        HEAPCAP_TARGETS_FILE: join(dir.path, 'targets.yaml'),
        HEAPCAP_TOKENS_FILE: join(dir.path, 'tokens.yaml'),
        HEAPCAP_STORAGE: `file://${join(dir.path, 'captures')}`,
        HEAPCAP_WATCH_INTERVAL: '500ms',
        // Redis keeps 4 samples: any range past 2 s is Prometheus'.
        HEAPCAP_WATCH_RETENTION: '2s',
        HEAPCAP_PROMETHEUS_URL: `${prometheus.url}/`,
      },
    });
  });
  after(async () => {
    await serve?.stop();
    await prometheus?.stop();
    await target?.kill();
    await redis?.stop();
    await dir?.cleanup();
  });

  void it('a range longer than Redis keeps is the curve Prometheus scraped from /metrics; a short one is still Redis', async () => {
    // A rule that never fires: the watcher samples the target for it.
    const rule = await fetch(`${serve.url}/v1/watch-rules`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'look', target: 'shapes', when: { metric: 'heapUsedRatio', above: 0.99, forSeconds: 60 }, cooldownSeconds: 60 }),
    });
    assert.equal(rule.status, 201, await rule.text());
    const metrics = await waitFor(
      async () => {
        const text = await (await fetch(`${serve.url}/metrics`)).text();
        return /^heapcap_target_heap_used_bytes\{target="shapes"\} \d+/m.test(text) ? text : undefined;
      },
      { timeoutMs: 30_000, what: 'the target gauges on /metrics' },
    );
    assert.match(metrics, /^heapcap_target_heap_limit_bytes\{target="shapes"\} \d+/m);
    assert.match(metrics, /^heapcap_target_rss_bytes\{target="shapes"\} \d+/m);

    // On whole seconds: the API and the check below then evaluate Prometheus at the same instants.
    const since = Math.ceil(Date.now() / 1000) * 1000;
    // Eight scrapes with the gauge: twice what Redis keeps.
    type Series = { values: [number, string][] }[];
    await waitFor(
      async () => {
        const r = await prometheus.query<Series>('/api/v1/query_range', { query: 'heapcap_target_heap_used_bytes{target="shapes"}', start: String(since / 1000), end: String(Math.floor(Date.now() / 1000)), step: '1' });
        return (r[0]?.values.length ?? 0) >= 8;
      },
      { timeoutMs: 60_000, intervalMs: 250, what: `Prometheus to hold 8 s of the gauge (${prometheus.logs().slice(-500)})` },
    );
    const until = Math.floor(Date.now() / 1000) * 1000;
    const range = `since=${new Date(since).toISOString()}&until=${new Date(until).toISOString()}`;
    const long = await get<SamplesBody>(`/v1/targets/shapes/samples?${range}`);
    assert.equal(long.status, 200, JSON.stringify(long.body));
    assert.equal(long.body.source, 'prometheus');
    assert.equal(long.body.keep, 4);
    assert.ok(long.body.items.length >= 8, `${long.body.items.length} points, more than the 4 Redis keeps`);
    // The very points Prometheus answers itself, at the step the API chose (1 s for this range).
    const own = await prometheus.query<Series>('/api/v1/query_range', {
      query: 'max by (target) (heapcap_target_heap_used_bytes{target="shapes"})',
      start: String(Math.floor(since / 1000)),
      end: String(Math.ceil(until / 1000)),
      step: '1',
    });
    const expected = own[0]!.values.map(([t, v]) => ({ t: Math.round(t * 1000), v: Number(v) })).filter((p) => p.t >= since && p.t <= until);
    assert.deepEqual(
      long.body.items.map((p) => ({ t: p.t, v: p.heapUsedBytes })),
      expected,
    );
    for (const p of long.body.items) {
      assert.ok(p.heapUsedBytes > 1024 * 1024 && p.heapLimitBytes !== null && p.heapLimitBytes > p.heapUsedBytes && p.rssBytes !== null && p.heapTotalBytes >= p.heapUsedBytes, JSON.stringify(p));
    }

    // Within the retention: Redis' own samples, every one.
    const now = Date.now();
    const short = await get<SamplesBody>(`/v1/targets/shapes/samples?since=${new Date(now - 1500).toISOString()}&until=${new Date(now).toISOString()}`);
    assert.equal(short.body.source, 'redis');
    assert.ok(short.body.items.length <= 4);

    // The console's target page (default range 1 h) shows the Prometheus curve and says where it comes from.
    const browser = await puppeteer.launch({ executablePath: chromiumBinary(), headless: true, userDataDir: join(dir.path, 'chromium'), args: [...CHROMIUM_FLAGS.filter((f) => f !== '--headless')] });
    try {
      const page = await browser.newPage();
      await page.goto(`${serve.url}/`);
      await page.waitForSelector('#token', { timeout: 15_000 });
      await page.type('#token', TOKEN);
      await page.click('button[type=submit]');
      await page.waitForSelector('[data-testid=who]', { timeout: 15_000 });
      await page.goto(`${serve.url}/ui/#/targets/shapes`);
      await page.waitForSelector('[data-testid=samples-source]', { timeout: 15_000 });
      const note = await page.evaluate(() => document.querySelector('[data-testid=samples-source]')?.textContent ?? '');
      const points = Number(/its (\d+) points come from Prometheus/.exec(note)?.[1]);
      assert.ok(points >= 8, note);
    } finally {
      await browser.close();
    }
  });
});
