/**
 * Issue 25, defect 4: after Redis loses its data (FLUSHALL here; a restart
 * without persistence is the same), heapcap re-creates what it owns, the
 * retention janitor's job scheduler, the targets file's entries and the
 * rules file's schedules and watch rules, says once what was lost, and
 * `/readyz` carries it.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { fixturePath, freePort, startDevServe, startNodeTarget, startRedis, tmpDir, waitFor } from '@heapcap/testkit';

/** BullMQ keeps job schedulers in the queue's `repeat` sorted set; the janitor's id is `_janitor`. */
const JANITOR = ['ZSCORE', 'heapcap:heapcap-schedules:repeat', '_janitor'];

void test('defect 4: FLUSHALL under a running serve: the janitor scheduler, the file targets and the rules file\'s rules come back, one log line says what was lost, /readyz carries it', async (t) => {
  const [redis, dir] = await Promise.all([startRedis(), tmpDir('heapcap-data-loss')]);
  t.after(async () => {
    await redis.stop();
    await dir.cleanup();
  });
  const work = join(dir.path, 'serve');
  await mkdir(work);
  await writeFile(join(work, 'targets.yaml'), `targets:\n  - id: filed\n    kind: node\n    inspect: 127.0.0.1:${await freePort()}\n`);
  // Never fires here: 03:00, and a watch rule sampling a port nobody listens on.
  await writeFile(join(work, 'rules.yaml'), 'schedules:\n  - id: nightly\n    target: filed\n    cron: "0 3 * * *"\nwatchRules:\n  - id: near-limit\n    target: filed\n    when: { metric: heapUsedRatio, above: 0.9, forSeconds: 60 }\n');
  const serve = await startDevServe(work, redis.url, { HEAPCAP_LOG_LEVEL: 'info', HEAPCAP_RULES_FILE: join(work, 'rules.yaml') });
  t.after(() => serve.stop());
  await waitFor(async () => (await redis.cli(...JANITOR)) !== '', { timeoutMs: 30_000, what: 'the janitor scheduler at start' });
  assert.deepEqual(await fileRules(serve.url), ['nightly:file', 'near-limit:file'], 'the rules file applied at start');
  const ready = (await (await fetch(`${serve.url}/readyz`)).json()) as { redisDataLoss?: unknown };
  assert.equal(ready.redisDataLoss, undefined, 'no loss before the FLUSHALL');

  assert.equal(await redis.cli('FLUSHALL'), 'OK');
  assert.equal(await redis.cli(...JANITOR), '', 'the FLUSHALL took the janitor');
  // The janitor within the schedule worker's reconcile interval (30 s), the targets within the keeper's (5 s).
  await waitFor(async () => (await redis.cli(...JANITOR)) !== '', { timeoutMs: 60_000, intervalMs: 200, what: 'the janitor scheduler re-created' });
  await waitFor(
    async () => {
      const res = await fetch(`${serve.url}/v1/targets`, { signal: AbortSignal.timeout(5_000) });
      return ((await res.json()) as { items: { target: { id: string } }[] }).items.some((x) => x.target.id === 'filed');
    },
    { timeoutMs: 30_000, what: 'the file target back' },
  );
  // The file's text did not change: without the loss noticed, the rules would stay gone.
  await waitFor(async () => JSON.stringify(await fileRules(serve.url)) === JSON.stringify(['nightly:file', 'near-limit:file']), { timeoutMs: 30_000, intervalMs: 200, what: "the rules file's schedule and watch rule back" });
  assert.equal(serve.stdout.lines().filter((l) => /applying the rules file \S+rules\.yaml again/.test(l)).length, 1);
  const lines = serve.stdout.lines().filter((l) => l.includes('"msg":"Redis lost its data'));
  assert.equal(lines.length, 1, lines.join('\n'));
  assert.match(lines[0] ?? '', /"level":50/);
  assert.match(lines[0] ?? '', /lost schedules, watch rules, API-registered targets, queued captures, capture records, pins, the audit log; heapcap re-creates the retention janitor, the targets file's entries and the records of stored captures/);
  const body = await waitFor(
    async () => {
      const r = (await (await fetch(`${serve.url}/readyz`)).json()) as { status?: string; redisDataLoss?: { at: string; lost: string[]; recreated: string[] } };
      return r.status === 'ready' && r.redisDataLoss !== undefined ? r : undefined;
    },
    { timeoutMs: 15_000, what: '/readyz ready with the loss' },
  );
  assert.ok(body.redisDataLoss !== undefined && !Number.isNaN(Date.parse(body.redisDataLoss.at)));
  assert.ok(body.redisDataLoss.lost.includes('schedules'));
  assert.deepEqual(body.redisDataLoss.recreated, ['the retention janitor', "the targets file's entries", "the records of stored captures (from their manifests, at the janitor's next run)"]);
});

/** The schedules, then the watch rules, as `id:source`. */
async function fileRules(url: string): Promise<string[]> {
  const out: string[] = [];
  for (const what of ['schedules', 'watch-rules']) {
    const res = await fetch(`${url}/v1/${what}`, { signal: AbortSignal.timeout(5_000) });
    const items = ((await res.json()) as { items?: { source: string; schedule?: { id: string }; rule?: { id: string } }[] }).items ?? [];
    out.push(...items.map((v) => `${(v.schedule ?? v.rule)!.id}:${v.source}`));
  }
  return out;
}

void test('issue 40: a queued capture lost with Redis data is queued again by the process that accepted it and succeeds with its original id; its GET never answers 404', async (t) => {
  const [redis, dir] = await Promise.all([startRedis(), tmpDir('heapcap-data-loss-queued')]);
  const target = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '2' } });
  t.after(async () => {
    await target.kill();
    await redis.stop();
    await dir.cleanup();
  });
  const work = join(dir.path, 'serve');
  await mkdir(work);
  await writeFile(join(work, 'targets.yaml'), `targets:\n  - id: held\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n`);
  const serve = await startDevServe(work, redis.url, { HEAPCAP_LOG_LEVEL: 'info' });
  t.after(() => serve.stop());
  // Another capture holds the target: this one stays queued (the worker puts it back, delayed, without an attempt).
  assert.equal(await redis.cli('SET', 'heapcap:hc:lock:held', 'another-capture', 'PX', '600000'), 'OK');
  const res = await fetch(`${serve.url}/v1/captures`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ target: 'held', reason: 'before the loss' }) });
  assert.equal(res.status, 202);
  const accepted = ((await res.json()) as { capture: { id: string; trigger: unknown } }).capture;
  const id = accepted.id;

  type Got = { status: number; capture?: { id: string; status: string; trigger: unknown; error: { code: string } | null; requeuedAfterDataLoss?: boolean } };
  const answers: Got[] = [];
  // Polled throughout, from before the FLUSHALL until the capture ends: every answer is the capture, none a 404.
  const poll = (async (): Promise<Got> => {
    for (;;) {
      const r = await fetch(`${serve.url}/v1/captures/${id}`, { signal: AbortSignal.timeout(10_000) });
      const got: Got = { status: r.status, ...((await r.json()) as { capture?: Got['capture'] }) };
      answers.push(got);
      if (got.status !== 200 || (got.capture !== undefined && ['succeeded', 'failed', 'cancelled'].includes(got.capture.status))) return got;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  await waitFor(() => answers.length >= 3, { timeoutMs: 10_000, what: 'polling before the loss' });
  assert.equal(await redis.cli('FLUSHALL'), 'OK');
  const lossAt = answers.length;
  const last = await Promise.race([poll, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no end within 90 s: ${JSON.stringify(answers.at(-1))}`)), 90_000))]);
  assert.deepEqual([...new Set(answers.map((a) => a.status))], [200], `every GET answered 200: ${JSON.stringify(answers.filter((a) => a.status !== 200))}`);
  assert.ok(answers.length - lossAt >= 10, `polled through the loss (${answers.length - lossAt} answers after it)`);
  assert.equal(last.capture?.status, 'succeeded', JSON.stringify(last));
  assert.equal(last.capture?.id, id);
  assert.deepEqual(last.capture?.trigger, accepted.trigger);
  assert.equal(last.capture?.requeuedAfterDataLoss, true);
  const line = serve.stdout.lines().find((l) => l.includes('lost with Redis') && l.includes(id));
  assert.ok(line !== undefined, 'a line names the capture queued again');
  assert.match(line, /queued again with the same ids/);
  const metrics = await (await fetch(`${serve.url}/metrics`)).text();
  assert.match(metrics, /^heapcap_redis_data_loss_total 1$/m);
  assert.match(metrics, /^heapcap_captures_lost_with_redis_total\{state="accepted"\} 1$/m);
  assert.match(metrics, /^heapcap_captures_lost_with_redis_total\{state="running"\} 0$/m);
});
