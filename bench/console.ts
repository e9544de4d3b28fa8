/**
 * The console's budgets (issue 24), measured in Debian's Chromium against
 * `bin/heapcap serve` on a real Redis:
 *
 *   node --import tsx bench/run.ts console [--targets=10000] [--records=100000] [--sampled=1000] [--interval=5] [--parts=targets,captures,sampler,metrics]
 *
 * - its JavaScript, gzipped (budget 150 KB);
 * - the targets view with 10,000 registered targets (stub inspector targets,
 *   testkit stub-inspector.ts: one HTTP server standing in for all of them):
 *   navigation to the first rows and to every row's samples (numbers and
 *   sparkline) with the sample requests that took, and the time from a filter
 *   keystroke or a page change to the next painted frame;
 * - the captures view over 100,000 succeeded records: navigation to the first
 *   rows, a status filter and the next page (server-side cursor);
 * - the watch sampler's cost per target at 1,000 sampled targets: serve's CPU
 *   over a window with a rule watching them against the same window without,
 *   per sample, and the Redis bytes of a sample;
 * - /metrics with every target's newest sample as heapcap_target_* gauges:
 *   the scrape's time at 10,000 targets.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import puppeteer, { type Page } from 'puppeteer-core';
import { gzipSync } from 'node:zlib';
import { CHROMIUM_FLAGS, chromiumBinary, freePort, startHeapcap, startRedis, startStubInspector, tmpDir, waitFor } from '@heapcap/testkit';
import { createQueue } from '@heapcap/state';
import { siblingOf } from '@heapcap/storage';
import { hashToken } from '@heapcap/api';
import { Checks, printTable, type Check } from './lib/report.ts';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';

declare const document: {
  querySelector(s: string): { value: string; dispatchEvent(e: unknown): boolean; click(): void } | null;
  querySelectorAll(s: string): { length: number };
};
declare const Event: new (type: string, init: { bubbles: boolean }) => unknown;
declare function requestAnimationFrame(cb: () => void): void;

const TOKEN = 'bench-console-admin-0b6a3f1d';

function arg(name: string, fallback: number): number {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a === undefined ? fallback : Number(a.slice(name.length + 3));
}

/** utime + stime of a process, in ms (clock ticks are 10 ms on Linux). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** `--parts=targets,captures` runs only those parts (default all four). */
function parts(): Set<string> {
  const a = process.argv.find((x) => x.startsWith('--parts='));
  return new Set((a === undefined ? 'targets,captures,sampler,metrics' : a.slice('--parts='.length)).split(','));
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Sets an input's value as a keystroke would, then waits for the frame after the next one: the page has rendered the result. */
async function inputToPaint(page: Page, selector: string, value: string): Promise<number> {
  return page.evaluate(
    (sel, v) =>
      new Promise<number>((resolve) => {
        const t0 = performance.now();
        const el = document.querySelector(sel)!;
        el.value = v;
        el.dispatchEvent(new Event('input', { bubbles: true }));
        requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now() - t0)));
      }),
    selector,
    value,
  );
}

export async function consoleBench(): Promise<Check[]> {
  const checks = new Checks('console');
  const TARGETS = arg('targets', 10_000);
  const RECORDS = arg('records', 100_000);
  const SAMPLED = arg('sampled', 1_000);
  const INTERVAL_S = arg('interval', 5);
  const PARTS = parts();
  const redis = await startRedis();
  const dir = await tmpDir('heapcap-bench-console');
  const stub = await startStubInspector();
  const queue = createQueue({ redisUrl: redis.url });
  let serve: Awaited<ReturnType<typeof startHeapcap>> | undefined;
  let browser: Awaited<ReturnType<typeof puppeteer.launch>> | undefined;
  try {
    const ids = Array.from({ length: TARGETS }, (_, i) => `svc${String(i % 100).padStart(2, '0')}-${String(i).padStart(5, '0')}`);
    const lines = ids.map((id, i) => `  - id: ${id}\n    kind: node\n    ws: ws://127.0.0.1:${stub.port}/t/${id}\n    labels: { service: ${id.slice(0, 5)}, env: ${i % 3 === 0 ? 'prod' : 'staging'}${i < SAMPLED ? ', sampled: "yes"' : ''} }\n`);
    await writeFile(join(dir.path, 'targets.yaml'), `targets:\n${lines.join('')}`);
    await writeFile(join(dir.path, 'tokens.yaml'), `tokens:\n  - name: bench\n    sha256: "${hashToken(TOKEN)}"\n    scopes: [captures:read, captures:write, artifacts:read, targets:admin]\n`);

    // Records the way the service writes them (request → start → succeed), on 100 targets, before serve runs:
    // their BullMQ jobs are dropped so that no worker tries to capture them.
    const recordTargets = ids.slice(0, 100);
    for (const id of recordTargets) await queue.targets.put({ id, kind: 'node', ws: `ws://127.0.0.1:${stub.port}/t/${id}` });
    const r0 = performance.now();
    let next = PARTS.has('captures') ? 0 : RECORDS;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < RECORDS; i = next++) {
        const targetId = recordTargets[i % recordTargets.length]!;
        const { record } = await queue.requestCapture({ targetId, trigger: { kind: 'rest', who: 'bench', reason: 'console bench' }, force: true });
        const started = await queue.attempts.start(record.id, targetId);
        if (!started.ok) throw new Error('start failed');
        const key = `${targetId}/2026/11/27/${record.id}.heapsnapshot.gz`;
        await queue.attempts.succeed(record.id, targetId, started.attempts, { queued: 10, connect: 20, preflight: 30, generate: 400, serialize: 300, sink: 50, total: 810 }, {
          key,
          manifestKey: siblingOf(key, 'manifest'),
          location: `file:///captures/${key}`,
          bytesUncompressed: 10_000_000,
          bytesStored: 1_500_000,
          sha256: 'c2d7424595acef80c2d7424595acef80c2d7424595acef80c2d7424595acef80',
          gzip: true,
        });
      }
    };
    await Promise.all(Array.from({ length: 32 }, worker));
    await queue.bull.obliterate({ force: true });
    const recordsS = (performance.now() - r0) / 1000;
    if (PARTS.has('captures')) console.log(`${RECORDS} records written in ${recordsS.toFixed(0)} s`);

    serve = await startHeapcap(['serve'], {
      cwd: dir.path,
      timeoutMs: 300_000,
      env: {
        HEAPCAP_REDIS_URL: redis.url,
        HEAPCAP_PORT: String(await freePort()),
        HEAPCAP_TARGETS_FILE: join(dir.path, 'targets.yaml'),
        HEAPCAP_TOKENS_FILE: join(dir.path, 'tokens.yaml'),
        HEAPCAP_STORAGE: `file://${join(dir.path, 'captures')}`,
        HEAPCAP_RETENTION_INTERVAL: '1h',
        HEAPCAP_WATCH_INTERVAL: `${INTERVAL_S}s`,
        HEAPCAP_RATE_LIMIT: '100000',
        HEAPCAP_LOG_LEVEL: 'warn',
      },
    });
    const url = serve.url;

    // JavaScript, gzipped at level 9 (what a CDN or proxy would send at best; the console test checks the same).
    const html = await (await fetch(`${url}/ui/`)).text();
    let jsGzip = 0;
    for (const f of [...html.matchAll(/src="(\/ui\/assets\/[^"]+\.js)"/g)].map((m) => m[1]!)) jsGzip += gzipSync(Buffer.from(await (await fetch(`${url}${f}`)).arrayBuffer()), { level: 9 }).length;

    browser = await puppeteer.launch({ executablePath: chromiumBinary(), headless: true, userDataDir: join(dir.path, 'chromium'), args: [...CHROMIUM_FLAGS.filter((f) => f !== '--headless')], defaultViewport: { width: 1280, height: 900 } });
    const page = await browser.newPage();
    await page.goto(`${url}/`);
    await page.waitForSelector('#token', { timeout: 30_000 });
    await page.type('#token', TOKEN);
    await page.click('button[type=submit]');
    await page.waitForSelector('[data-testid=who]', { timeout: 30_000 });

    // Targets view.
    const nav = async (hash: string, rowSelector: string): Promise<number> => {
      await page.goto('about:blank');
      const t0 = performance.now();
      await page.goto(`${url}/ui/${hash}`);
      await page.waitForSelector(rowSelector, { timeout: 60_000 });
      return performance.now() - t0;
    };
    // Sample requests the page makes (one per row before GET /v1/targets/samples/latest, one per page since).
    let sampleRequests = 0;
    page.on('request', (r) => {
      if (/\/v1\/targets\/[^?]*samples/.test(r.url())) sampleRequests++;
    });
    // Every row of the page with its samples' answer: no sparkline cell still shows "…".
    const rowsComplete = (): Promise<unknown> =>
      page.waitForFunction(() => document.querySelectorAll('tr[data-target]').length > 0 && [...(document.querySelectorAll('tr[data-target] td:last-child') as unknown as { textContent: string }[])].every((td) => td.textContent !== '…'), { timeout: 60_000, polling: 'raf' });
    const targetsFirst: number[] = [];
    const targetsComplete: number[] = [];
    const requestsPerPage: number[] = [];
    const nextComplete: number[] = [];
    for (let i = 0; i < (PARTS.has('targets') ? 3 : 0); i++) {
      targetsFirst.push(await nav('#/targets', 'tr[data-target]'));
      await page.goto('about:blank');
      sampleRequests = 0;
      const t0 = performance.now();
      await page.goto(`${url}/ui/#/targets`);
      await rowsComplete();
      targetsComplete.push(performance.now() - t0);
      requestsPerPage.push(sampleRequests);
      // The next page, all of its rows with their samples.
      const t1 = performance.now();
      await page.click('[data-testid=targets-next]');
      await page.waitForFunction(() => /^51–/.test((document.querySelector('[data-testid=targets-page]') as unknown as { textContent: string }).textContent), { timeout: 60_000 });
      await rowsComplete();
      nextComplete.push(performance.now() - t1);
    }
    if (!PARTS.has('targets')) await nav('#/targets', 'tr[data-target]');
    const filterLatency: number[] = [];
    for (const f of ['s', 'se', 'svc', 'svc4', 'svc42', 'env=prod', 'env=prod service=svc07', '', 'staging', '']) filterLatency.push(await inputToPaint(page, 'section input', f));
    const pageLatency: number[] = [];
    for (let i = 0; i < 5; i++) {
      pageLatency.push(
        await page.evaluate(
          () =>
            new Promise<number>((resolve) => {
              const t0 = performance.now();
              document.querySelector('[data-testid=targets-next]')!.click();
              requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now() - t0)));
            }),
        ),
      );
    }
    const domRows = await page.evaluate(() => document.querySelectorAll('tr[data-target]').length);

    // Captures view.
    const capturesFirst: number[] = [];
    for (let i = 0; i < (PARTS.has('captures') ? 3 : 0); i++) capturesFirst.push(await nav('#/captures', 'tr[data-capture]'));
    const statusFilter: number[] = [];
    const nextPage: number[] = [];
    for (let i = 0; i < (PARTS.has('captures') ? 3 : 0); i++) {
      // Every record succeeded: the rows look the same after the filter, so wait for its answer, then the rows.
      let t0 = performance.now();
      await Promise.all([page.waitForResponse((r) => r.url().includes('/v1/captures?'), { timeout: 30_000 }), page.select('section select', i % 2 === 0 ? 'succeeded' : '')]);
      await page.waitForSelector('tr[data-capture]', { timeout: 30_000 });
      statusFilter.push(performance.now() - t0);
      const before = await page.$eval('tr[data-capture]', (e) => e.getAttribute('data-capture'));
      t0 = performance.now();
      await page.click('xpath/.//button[normalize-space()="Next"]');
      await page.waitForFunction((was) => document.querySelectorAll('tr[data-capture]').length > 0 && document.querySelectorAll(`tr[data-capture="${was}"]`).length === 0, { timeout: 30_000 }, before);
      nextPage.push(performance.now() - t0);
    }

    // The sampler: serve's CPU with nothing sampled, then with a rule watching SAMPLED targets.
    const windowMs = Math.max(30_000, 6 * INTERVAL_S * 1000);
    const cpuOver = async (): Promise<{ cpu: number; samples: number; wall: number }> => {
      const s0 = stub.stats().methods['Runtime.getHeapUsage'] ?? 0;
      const c0 = cpuMs(serve!.pid);
      const t0 = performance.now();
      await waitFor(() => performance.now() - t0 >= windowMs, { timeoutMs: windowMs + 5_000, intervalMs: 500, what: 'the window' });
      return { cpu: cpuMs(serve!.pid) - c0, samples: (stub.stats().methods['Runtime.getHeapUsage'] ?? 0) - s0, wall: performance.now() - t0 };
    };
    const sampler = async () => {
      const idle = await cpuOver();
      const memBefore = Number(/^used_memory:(\d+)/m.exec(await queue.redis.info('memory'))?.[1]);
      const created = await fetch(`${url}/v1/watch-rules`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'bench', selector: { sampled: 'yes' }, when: { metric: 'heapUsedRatio', above: 0.99, forSeconds: 3600 }, cooldownSeconds: 3600 }),
      });
      if (created.status !== 201) throw new Error(`rule: ${created.status} ${await created.text()}`);
      // Every watched target sampled at least twice: its session is open, the steady state begins.
      await waitFor(async () => (await queue.watch.sampleCount(ids[SAMPLED - 1]!)) >= 2 && (await queue.watch.sampleCount(ids[0]!)) >= 2, { timeoutMs: 20 * INTERVAL_S * 1000 + 60_000, intervalMs: 500, what: 'every watched target sampled twice' });
      const sampling = await cpuOver();
      const streamBytes = Number(await queue.redis.call('MEMORY', 'USAGE', queue.keys.watchSamples(ids[0]!), 'SAMPLES', '0'));
      const perStream = await queue.watch.sampleCount(ids[0]!);
      const memAfter = Number(/^used_memory:(\d+)/m.exec(await queue.redis.info('memory'))?.[1]);
      let storedSamples = 0;
      for (const id of ids.slice(0, SAMPLED)) storedSamples += await queue.watch.sampleCount(id);
      const bytesPerSample = (memAfter - memBefore) / storedSamples;
      const extraCpu = sampling.cpu - (idle.cpu * sampling.wall) / idle.wall;
      const cpuPerSampleMs = extraCpu / sampling.samples;
      const perTargetCorePct = (cpuPerSampleMs / (INTERVAL_S * 1000)) * 100;
      const perDay = 86_400 / INTERVAL_S;
      return { idle, sampling, streamBytes, perStream, bytesPerSample, cpuPerSampleMs, perTargetCorePct, perDay };
    };
    const sm = PARTS.has('sampler') ? await sampler() : null;

    // /metrics: every target with a fresh sample, then the scrape (what Prometheus waits for).
    const scrape = async () => {
      for (const id of ids) await queue.watch.addSample(id, { t: Date.now(), heapUsedBytes: 50_000_000, heapTotalBytes: 80_000_000, heapLimitBytes: 4_000_000_000, rssBytes: 120_000_000 }, 100, 3_600_000);
      const times: number[] = [];
      let series = 0;
      for (let i = 0; i < 5; i++) {
        const t0 = performance.now();
        const text = await (await fetch(`${url}/metrics`)).text();
        times.push(performance.now() - t0);
        series = text.split('\n').filter((l) => l.startsWith('heapcap_target_heap_used_bytes{')).length;
      }
      return { times, series };
    };
    const mt = PARTS.has('metrics') ? await scrape() : null;

    const rows: [string, string][] = [['console JavaScript, gzipped', `${(jsGzip / 1024).toFixed(1)} KB`]];
    if (PARTS.has('targets')) {
      rows.push(
        [`targets view, ${TARGETS} targets: navigation → first rows (median of 3)`, `${median(targetsFirst).toFixed(0)} ms`],
        ['targets view: navigation → every row with its samples (median of 3)', `${median(targetsComplete).toFixed(0)} ms`],
        ['targets view: sample requests for the first page', String(median(requestsPerPage))],
        ['targets view: Next page → every row with its samples (median of 3)', `${median(nextComplete).toFixed(0)} ms`],
        ['targets view: filter keystroke → painted (median / max of 10)', `${median(filterLatency).toFixed(1)} / ${Math.max(...filterLatency).toFixed(1)} ms`],
        ['targets view: Next page → painted (median / max of 5)', `${median(pageLatency).toFixed(1)} / ${Math.max(...pageLatency).toFixed(1)} ms`],
        ['targets view: rows in the DOM', String(domRows)],
      );
    }
    if (PARTS.has('captures')) {
      rows.push(
        [`${RECORDS} records written (32 at a time)`, `${recordsS.toFixed(0)} s`],
        [`captures view, ${RECORDS} records: navigation → first rows (median of 3)`, `${median(capturesFirst).toFixed(0)} ms`],
        ['captures view: status filter → rows (median of 3)', `${median(statusFilter).toFixed(0)} ms`],
        ['captures view: Next page → rows (median of 3)', `${median(nextPage).toFixed(0)} ms`],
      );
    }
    if (sm !== null) {
      rows.push(
        [`serve CPU, ${TARGETS} targets, none sampled`, `${((sm.idle.cpu / sm.idle.wall) * 100).toFixed(1)} % of a core`],
        [`serve CPU, ${SAMPLED} sampled every ${INTERVAL_S} s`, `${((sm.sampling.cpu / sm.sampling.wall) * 100).toFixed(1)} % of a core (${sm.sampling.samples} samples in ${(sm.sampling.wall / 1000).toFixed(0)} s)`],
        ['sampler CPU per sample', `${sm.cpuPerSampleMs.toFixed(3)} ms`],
        [`sampler CPU per target at ${INTERVAL_S} s (15 s default: a third)`, `${sm.perTargetCorePct.toFixed(4)} % of a core`],
        ['Redis bytes per sample (used_memory delta / samples stored)', sm.bytesPerSample.toFixed(0)],
        [`one target's stream (${sm.perStream} samples, MEMORY USAGE)`, `${sm.streamBytes} B`],
        [`Redis per target per day at ${INTERVAL_S} s (${sm.perDay} samples; 15 s: 5,760)`, `${((sm.bytesPerSample * sm.perDay) / 1e6).toFixed(2)} MB`],
      );
    }
    if (mt !== null) rows.push([`/metrics with ${TARGETS} targets: scrape time (median / max of 5; ${mt.series} heap-used series)`, `${median(mt.times).toFixed(0)} / ${Math.max(...mt.times).toFixed(0)} ms`]);
    printTable(['what', 'value'], rows);
    checks.expect(jsGzip <= 150 * 1024, 'console JavaScript ≤ 150 KB gzipped', `${(jsGzip / 1024).toFixed(1)} KB`);
    if (PARTS.has('targets')) {
      checks.expect(median(targetsFirst) < 3_000, `targets view with ${TARGETS} targets shows rows within 3 s`, `${median(targetsFirst).toFixed(0)} ms`);
      // 200 ms: the "good" bound of Chrome's Interaction to Next Paint, on the median (the machine is shared: its load lands on single interactions).
      checks.expect(median(filterLatency) < 200 && median(pageLatency) < 200, 'targets view: filtering and paging paint within 200 ms (median)', `filter ${median(filterLatency).toFixed(0)} ms, page ${median(pageLatency).toFixed(0)} ms; load average ${loadavg()[0]!.toFixed(1)}`);
    }
    if (PARTS.has('captures')) checks.expect(median(capturesFirst) < 3_000 && median(nextPage) < 1_000, `captures view with ${RECORDS} records: rows within 3 s, next page within 1 s`, `${median(capturesFirst).toFixed(0)} ms, next ${median(nextPage).toFixed(0)} ms`);
    if (sm !== null) checks.expect(sm.sampling.samples >= SAMPLED, `the sampler reached all ${SAMPLED} targets in the window`, `${sm.sampling.samples} samples`);
  } finally {
    await browser?.close();
    await serve?.stop();
    await queue.close();
    await stub.close();
    await redis.stop();
    await dir.cleanup();
  }
  return checks.list;
}
