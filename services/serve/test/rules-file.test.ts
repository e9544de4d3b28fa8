/**
 * HEAPCAP_RULES_FILE across three `bin/heapcap serve` replicas on one real
 * Redis, all given the same file: a rule added to the file (replaced by a
 * rename, as an editor or a ConfigMap update does) appears through the API of
 * each replica with `source: file`; the API refuses to change it (409
 * `managed_by_file`); an API-made schedule stays beside it; a broken file (a
 * YAML syntax error, then a schema error) changes nothing and its log line
 * names the line and column; a rule taken out of the file goes.
 */
import assert from 'node:assert/strict';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { freePort, startHeapcap, startRedis, tmpDir, waitFor, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';

let redis: RedisServer;
let dir: TmpDir;
let replicas: RunningHeapcap[] = [];
let rulesPath: string;

/** Replace the rules file by a rename (a new inode), as editors and Kubernetes' ConfigMap volumes do. */
async function replaceRules(text: string): Promise<void> {
  const tmp = join(dir.path, `.rules-${Date.now()}-${Math.random()}.tmp`);
  await writeFile(tmp, text);
  await rename(tmp, rulesPath);
}

const SCHEDULE_A = `schedules:\n  - id: nightly\n    target: checkout-1\n    cron: "0 3 * * *"\n`;
const WITH_B = `${SCHEDULE_A}  - id: hourly\n    target: checkout-1\n    cron: "7 * * * *"\nwatchRules:\n  - id: near-limit\n    target: checkout-1\n    when: { metric: heapUsedRatio, above: 0.9, forSeconds: 60 }\n`;

before(async () => {
  [redis, dir] = await Promise.all([startRedis(), tmpDir('heapcap-rules-file')]);
  const targets = join(dir.path, 'targets.yaml');
  // Never captured here: the schedules run at 03:00 and at minute 7, the watch rule samples a port nobody listens on.
  await writeFile(targets, 'targets:\n  - id: checkout-1\n    kind: node\n    inspect: 127.0.0.1:9\n');
  rulesPath = join(dir.path, 'rules.yaml');
  await writeFile(rulesPath, SCHEDULE_A);
  const ports = await Promise.all([freePort(), freePort(), freePort()]);
  replicas = await Promise.all(
    ports.map((port) =>
      startHeapcap(['serve', '--dev'], {
        cwd: dir.path,
        env: { HEAPCAP_REDIS_URL: redis.url, HEAPCAP_PORT: String(port), HEAPCAP_TARGETS_FILE: targets, HEAPCAP_RULES_FILE: rulesPath },
      }),
    ),
  );
});
after(async () => {
  await Promise.all(replicas.map((r) => r.stop()));
  await redis?.stop();
  await dir?.cleanup();
});

interface View {
  source: string;
  schedule?: { id: string; cron?: string };
  rule?: { id: string };
}

async function api(replica: RunningHeapcap, method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${replica.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

async function ids(replica: RunningHeapcap, what: 'schedules' | 'watch-rules'): Promise<string[]> {
  const { json } = await api(replica, 'GET', `/v1/${what}`);
  return (json['items'] as View[]).map((v) => `${(v.schedule ?? v.rule)!.id}:${v.source}`).sort();
}

/** Every replica's API lists exactly these schedules and watch rules (id:source). */
async function allSee(schedules: string[], rules: string[], what: string): Promise<void> {
  await waitFor(
    async () => {
      for (const r of replicas) {
        if (JSON.stringify(await ids(r, 'schedules')) !== JSON.stringify(schedules)) return false;
        if (JSON.stringify(await ids(r, 'watch-rules')) !== JSON.stringify(rules)) return false;
      }
      return true;
    },
    { timeoutMs: 20_000, intervalMs: 100, what },
  );
}

void test('three replicas apply one rules file; the API cannot change its rules; a broken file changes nothing', async () => {
  await allSee(['nightly:file'], [], 'the start-up file on every replica');

  // An API-made schedule lives beside the file's.
  const made = await api(replicas[0]!, 'POST', '/v1/schedules', { id: 'by-hand', target: 'checkout-1', cron: '30 4 * * *' });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  assert.equal(made.json['source'], 'api');

  // A rule added to the file (renamed over it) appears on all three.
  await replaceRules(WITH_B);
  await allSee(['by-hand:api', 'hourly:file', 'nightly:file'], ['near-limit:file'], 'the added rules on every replica');
  const one = await api(replicas[2]!, 'GET', '/v1/schedules/hourly');
  assert.equal(one.json['source'], 'file');
  assert.equal((one.json['schedule'] as { owner: string }).owner, 'rules-file');

  // Through the API of any replica, a file rule cannot be replaced, paused or deleted.
  for (const [i, method, path, body] of [
    [1, 'PUT', '/v1/schedules/hourly', { target: 'checkout-1', cron: '8 * * * *' }],
    [2, 'POST', '/v1/schedules/hourly/pause', undefined],
    [0, 'DELETE', '/v1/schedules/nightly', undefined],
    [1, 'DELETE', '/v1/watch-rules/near-limit', undefined],
    [2, 'POST', '/v1/watch-rules/near-limit/pause', undefined],
  ] as const) {
    const res = await api(replicas[i]!, method, path, body);
    assert.equal(res.status, 409, `${method} ${path}: ${JSON.stringify(res.json)}`);
    const error = res.json['error'] as { code: string; message: string };
    assert.equal(error.code, 'managed_by_file');
    assert.match(error.message, /\(HEAPCAP_RULES_FILE\): edit or remove it there/);
  }
  // The API-made one is still the API's to change.
  assert.equal((await api(replicas[1]!, 'POST', '/v1/schedules/by-hand/pause')).status, 200);
  assert.equal(((await api(replicas[0]!, 'GET', '/v1/schedules/hourly')).json['schedule'] as { cron: string }).cron, '7 * * * *');

  // Applied: /metrics says the file is valid, nothing refused yet.
  for (const r of replicas) assert.deepEqual(await rulesMetrics(r), { valid: 1, refused: 0 });

  // A YAML syntax error: refused whole, with its line and column in the log; nothing changes.
  const errorsBefore = replicas.map((r) => refusals(r).length);
  await replaceRules(`schedules:\n  - id: nightly\n    target: checkout-1\n    cron: "0 3 * * *\n`);
  const syntax = await waitFor(() => refusalsAfter(errorsBefore), { timeoutMs: 20_000, intervalMs: 100, what: 'every replica refusing the syntax error' });
  for (const line of syntax) assert.match(line.msg, /rules\.yaml:\d+:\d+: not YAML or JSON/);
  await allSee(['by-hand:api', 'hourly:file', 'nightly:file'], ['near-limit:file'], 'nothing changed after a syntax error');
  // The rules keep running, so only the metric shows it (heapcap_rules_file_valid 0: the alert's input).
  for (const r of replicas) assert.deepEqual(await rulesMetrics(r), { valid: 0, refused: 1 });

  // A schema error (zod): the same, the line and column are those of the bad value.
  const before2 = replicas.map((r) => refusals(r).length);
  await replaceRules(`schedules:\n  - id: nightly\n    target: checkout-1\n    every: 15\n`);
  const schema = await waitFor(() => refusalsAfter(before2), { timeoutMs: 20_000, intervalMs: 100, what: 'every replica refusing the schema error' });
  for (const line of schema) {
    assert.match(line.msg, /rules\.yaml:4:12: schedules\.0\.every: /);
    assert.deepEqual([line.line, line.column], [4, 12]);
  }
  await allSee(['by-hand:api', 'hourly:file', 'nightly:file'], ['near-limit:file'], 'nothing changed after a schema error');
  for (const r of replicas) assert.deepEqual(await rulesMetrics(r), { valid: 0, refused: 2 });

  // A good file again: the rules it no longer declares go (file ones only; the API's stays).
  await replaceRules(SCHEDULE_A);
  await allSee(['by-hand:api', 'nightly:file'], [], 'the removed rules gone from every replica');
  // The rules live in the shared Redis: the first replica to read the new file makes them visible to all, while
  // another may not have read it yet. Each says valid once it has.
  for (const r of replicas) {
    await waitFor(async () => JSON.stringify(await rulesMetrics(r)) === JSON.stringify({ valid: 1, refused: 2 }), { timeoutMs: 20_000, intervalMs: 100, what: 'every replica reading the good file' });
  }
});

/** heapcap_rules_file_valid and heapcap_rules_file_refused_total on the replica's /metrics. */
async function rulesMetrics(r: RunningHeapcap): Promise<{ valid: number; refused: number }> {
  const text = await (await fetch(`${r.url}/metrics`)).text();
  const value = (name: string): number => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { valid: value('heapcap_rules_file_valid'), refused: value('heapcap_rules_file_refused_total') };
}

interface LogLine {
  msg: string;
  line?: number;
  column?: number;
}

function refusals(r: RunningHeapcap): LogLine[] {
  return r.stdout
    .lines()
    .filter((l) => l.includes('rules file refused'))
    .map((l) => JSON.parse(l) as LogLine);
}

/** The newest refusal line of each replica, once every replica has logged one more than `before`. */
function refusalsAfter(before: number[]): LogLine[] | undefined {
  const now = replicas.map(refusals);
  if (now.some((lines, i) => lines.length <= before[i]!)) return undefined;
  return now.map((lines) => lines.at(-1)!);
}
