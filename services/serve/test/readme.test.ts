/**
 * The README works: every command it shows, run the way users type it —
 * `bin/heapcap …` (the bundled build), `npm run heapcap -- …`, `npm run demo --
 * --once` — from working directories other than the checkout, and the service
 * from a copy of `dist/` alone (what the Docker image ships). Real Redis, MinIO,
 * Chromium and Node targets.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { cp, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import {
  assertGoodArtifact,
  assertSnapshotShape,
  commandEnv,
  countObjects,
  fixturePath,
  FREE_PORT,
  freePort,
  HEAPCAP_BIN,
  heapHolderShape,
  onProcessExit,
  OutputLog,
  pageOrders,
  readManifests,
  REPO_ROOT,
  runCommand,
  runHeapcap,
  slackSign,
  slashCommandBody,
  startChromium,
  startHeapcap,
  startMinio,
  startNodeTarget,
  startPageServer,
  startRedis,
  startSlackStandIn,
  tmpDir,
  waitFor,
  GiveUp,
  type HeapSnapshotJson,
  type NodeTarget,
  type RedisServer,
  type RunningHeapcap,
  type TmpDir,
} from '@heapcap/testkit';

const HEAP_MB = 5;

let redis: RedisServer;
let target: NodeTarget;
let work: TmpDir;

before(async () => {
  // A fresh build of the command, as a new checkout gets on first use.
  const build = await runCommand(process.execPath, ['scripts/build.mjs'], { timeoutMs: 120_000 });
  assert.equal(build.code, 0, build.stderr);
  [redis, target, work] = await Promise.all([startRedis(), startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: String(HEAP_MB) } }), tmpDir('heapcap-readme')]);
});
after(async () => {
  await target?.kill();
  await redis?.stop();
  await work?.cleanup();
});

/** A targets file registering the shared target as `checkout-api`, in `dir`. */
async function targetsFile(dir: string): Promise<string> {
  const path = join(dir, 'heapcap.targets.yaml');
  await writeFile(path, `targets:\n  - id: checkout-api\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n    labels: { service: checkout, env: prod, owner: payments }\n`);
  return path;
}

/** GET/POST against the service, with an optional bearer token. */
async function call(url: string, init: { method?: string; token?: string; body?: unknown } = {}): Promise<Response> {
  return fetch(url, {
    method: init.method ?? 'GET',
    headers: { ...(init.token === undefined ? {} : { authorization: `Bearer ${init.token}` }), ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    signal: AbortSignal.timeout(90_000),
  });
}

/** The artifact endpoint's default encoding is the decompressed snapshot JSON. */
async function downloadSnapshot(base: string, id: string, token?: string): Promise<HeapSnapshotJson> {
  const res = await call(`${base}/v1/captures/${id}/artifact`, { token });
  assert.equal(res.status, 200, await res.clone().text());
  return JSON.parse(await res.text()) as HeapSnapshotJson;
}

void describe('README: capturing (bin/heapcap capture, npm run heapcap -- capture)', () => {
  void test('--node HOST:PORT, from another working directory', async () => {
    const out = join(work.path, 'node');
    const res = await runHeapcap(['capture', '--node', `127.0.0.1:${target.port}`, '--out', out, '--json'], { cwd: work.path });
    assert.equal(res.code, 0, res.stderr);
    const m = await readManifests(res.stdout);
    assert.equal(countObjects(await assertGoodArtifact(m), 'Order'), heapHolderShape(HEAP_MB).orders);
  });

  void test('--ws URL', async () => {
    const res = await runHeapcap(['capture', '--ws', target.wsUrl ?? '', '--out', join(work.path, 'ws'), '--json'], { cwd: work.path });
    assert.equal(res.code, 0, res.stderr);
    await assertGoodArtifact(await readManifests(res.stdout));
  });

  void test('--pid PID (a process started without --inspect)', async (t) => {
    const port = await freePort();
    const plain = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), inspect: false, nodeFlags: [`--inspect-port=${port}`], env: { HEAP_MB: '2' } });
    t.after(() => plain.kill());
    const res = await runHeapcap(['capture', '--pid', String(plain.pid), '--port', String(port), '--out', join(work.path, 'pid'), '--json'], { cwd: work.path });
    assert.equal(res.code, 0, res.stderr);
    const m = await readManifests(res.stdout);
    assert.equal(m.runtime.pid, plain.pid);
    await assertGoodArtifact(m);
  });

  void test('--chromium HOST:PORT --url-pattern', async (t) => {
    const pages = await startPageServer();
    const chromium = await startChromium();
    t.after(async () => {
      await chromium.close();
      await pages.close();
    });
    const url = pages.url('/app/leaky?mb=3');
    await chromium.openPage(url);
    const res = await runHeapcap(['capture', '--chromium', `127.0.0.1:${chromium.port}`, '--url-pattern', 'leaky\\?mb=3$', '--out', join(work.path, 'chromium'), '--json'], { cwd: work.path });
    assert.equal(res.code, 0, res.stderr);
    const m = await readManifests(res.stdout);
    assert.equal(m.runtime.url, url);
    assert.equal(countObjects(await assertGoodArtifact(m), 'Order'), pageOrders(3));
  });

  void test('--out s3://BUCKET/PREFIX --s3-endpoint (MinIO)', async (t) => {
    const minio = await startMinio();
    t.after(() => minio.stop());
    await minio.createBucket('heapcap');
    const res = await runHeapcap(['capture', '--node', `127.0.0.1:${target.port}`, '--out', 's3://heapcap/readme', '--s3-endpoint', minio.endpoint, '--json'], {
      cwd: work.path,
      env: { AWS_ACCESS_KEY_ID: minio.accessKey, AWS_SECRET_ACCESS_KEY: minio.secretKey },
    });
    assert.equal(res.code, 0, res.stderr);
    const m = JSON.parse(res.stdout) as { artifact: { location: string; key: string; sha256: string } };
    assert.ok(m.artifact.location.startsWith('s3://heapcap/readme/'), m.artifact.location);
    const { GetObjectCommand } = await import('@aws-sdk/client-s3');
    const obj = await minio.client.send(new GetObjectCommand({ Bucket: 'heapcap', Key: `readme/${m.artifact.key}` }));
    const raw = gunzipSync(Buffer.from(await obj.Body!.transformToByteArray()));
    assert.equal(createHash('sha256').update(raw).digest('hex'), m.artifact.sha256);
  });

  void test('npm run heapcap -- capture (the npm script runs the same command)', async () => {
    const res = await runCommand('npm', ['run', '--silent', 'heapcap', '--', 'capture', '--node', `127.0.0.1:${target.port}`, '--out', join(work.path, 'npm'), '--json']);
    assert.equal(res.code, 0, res.stderr);
    await assertGoodArtifact(await readManifests(res.stdout));
  });
});

void describe('README: running the service', () => {
  void test('bin/heapcap serve --dev in a fresh directory; trigger --wait, status, the artifact download', async (t) => {
    const dir = join(work.path, 'serve-dev');
    await mkdir(dir);
    const env = { HEAPCAP_REDIS_URL: redis.url, HEAPCAP_PORT: FREE_PORT, HEAPCAP_TARGETS_FILE: await targetsFile(dir) };
    const serve = await startHeapcap(['serve', '--dev'], { cwd: dir, env });
    t.after(() => serve.stop());
    assert.match(serve.stderr.text(), /AUTHENTICATION IS OFF/);
    const client = { HEAPCAP_API_URL: serve.url };
    const trig = await runHeapcap(['trigger', 'checkout-api', '--wait', '60', '--reason', 'OOM alert #4711', '--json'], { cwd: dir, env: client });
    assert.equal(trig.code, 0, trig.stderr);
    const { capture } = JSON.parse(trig.stdout) as { capture: { id: string; status: string; artifact: { location: string } } };
    assert.equal(capture.status, 'succeeded');
    // The embedded default storage is ./data/captures of the working directory.
    assert.ok(capture.artifact.location.startsWith(join(dir, 'data/captures/checkout-api/')), capture.artifact.location);
    const status = await runHeapcap(['status', capture.id], { cwd: dir, env: client });
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`capture ${capture.id}  target checkout-api  succeeded`));
    const snapshot = await downloadSnapshot(serve.url, capture.id);
    assert.equal(countObjects(snapshot, 'Order'), heapHolderShape(HEAP_MB).orders);
    // The API documents itself.
    assert.equal((await call(`${serve.url}/openapi.json`)).status, 200);
    assert.equal((await call(`${serve.url}/docs/static/index.html`)).status, 200);
    assert.equal(await serve.stop(), 0, 'SIGTERM stops it cleanly');
  });

  void test('with a tokens file: curl with a bearer token, and heapcap trigger/status with HEAPCAP_TOKEN', async (t) => {
    const dir = join(work.path, 'serve-tokens');
    await mkdir(dir);
    const token = randomBytes(32).toString('hex');
    const tokens = join(dir, 'heapcap.tokens.yaml');
    const sha = createHash('sha256').update(token).digest('hex');
    await writeFile(tokens, `tokens:\n  - name: oncall-runbook\n    sha256: "${sha}"\n    scopes: [captures:read, captures:write, artifacts:read]\n`);
    const env = { HEAPCAP_REDIS_URL: redis.url, HEAPCAP_PORT: FREE_PORT, HEAPCAP_TARGETS_FILE: await targetsFile(dir), HEAPCAP_TOKENS_FILE: tokens };
    const serve = await startHeapcap(['serve'], { cwd: dir, env });
    t.after(() => serve.stop());
    // curl -X POST '…/v1/captures?wait=60' -H "Authorization: Bearer $TOKEN" -d '{"target":…,"reason":…}'
    const refused = await call(`${serve.url}/v1/captures?wait=60`, { method: 'POST', body: { target: 'checkout-api' } });
    assert.equal(refused.status, 401);
    const res = await call(`${serve.url}/v1/captures?wait=60`, { method: 'POST', token, body: { target: 'checkout-api', reason: 'OOM alert #4711', force: true } });
    assert.ok(res.status === 200 || res.status === 201, `${res.status} ${await res.clone().text()}`);
    const { capture } = (await res.json()) as { capture: { id: string; status: string } };
    assert.equal(capture.status, 'succeeded');
    await downloadSnapshot(serve.url, capture.id, token);
    const client = { HEAPCAP_API_URL: serve.url, HEAPCAP_TOKEN: token };
    const trig = await runHeapcap(['trigger', 'checkout-api', '--wait', '60', '--reason', 'OOM alert #4711'], { cwd: dir, env: client });
    assert.equal(trig.code, 0, trig.stderr);
    const id = /capture (\S+)/.exec(trig.stdout)?.[1];
    assert.ok(id !== undefined, trig.stdout);
    const status = await runHeapcap(['status', id], { cwd: dir, env: client });
    assert.equal(status.code, 0, status.stderr);
    // heapcap diff with two capture ids: through the API, from the summaries written while they streamed.
    const diff = await runHeapcap(['diff', capture.id, id], { cwd: dir, env: client });
    assert.equal(diff.code, 0, diff.stderr);
    assert.match(diff.stdout, new RegExp(`^base  capture ${capture.id} \\(checkout-api\\): [\\d,]+ nodes`, 'm'));
    assert.match(diff.stdout, /^classes, largest self-size growth first/m);
    // The rest of the API as the README shows it: captures list, download (the DevTools file name), pin.
    const listed = await runHeapcap(['captures', 'list', '--target', 'checkout-api'], { cwd: dir, env: client });
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(`^${id} +checkout-api +succeeded `, 'm'));
    const dl = await runHeapcap(['captures', 'download', id], { cwd: dir, env: client });
    assert.equal(dl.code, 0, dl.stderr);
    const file = new RegExp(`^wrote (\\S+/checkout-api-\\d{8}T\\d{6}Z-${id}\\.heapsnapshot) `).exec(dl.stdout)?.[1];
    assert.ok(file !== undefined, dl.stdout);
    assertSnapshotShape(JSON.parse((await readFile(file)).toString()) as HeapSnapshotJson);
    assert.match(dl.stdout, /Memory panel → Load/);
    const pin = await runHeapcap(['captures', 'pin', id, '--reason', 'before the 4.2 deploy'], { cwd: dir, env: client });
    assert.equal(pin.code, 0, pin.stderr);
    // Scheduled captures: create, list, pause as the README shows them, then delete.
    const create = await runHeapcap(['schedules', 'create', '--id', 'checkout-30m', '--selector', 'service=checkout,env=prod', '--every', '30m', '--keep-last', '48'], { cwd: dir, env: client });
    assert.equal(create.code, 0, create.stderr);
    assert.match(create.stdout, /^checkout-30m +service=checkout,env=prod \(1\) +every 30m +active .* 48, 30d$/m);
    const list = await runHeapcap(['schedules', 'list'], { cwd: dir, env: client });
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^checkout-30m /m);
    const pause = await runHeapcap(['schedules', 'pause', 'checkout-30m'], { cwd: dir, env: client });
    assert.equal(pause.code, 0, pause.stderr);
    assert.match(pause.stdout, /^checkout-30m .* paused /m);
    const del = await runHeapcap(['schedules', 'delete', 'checkout-30m'], { cwd: dir, env: client });
    assert.equal(del.code, 0, del.stderr);
  });

  void test('from Slack: /heapcap capture checkout-api "OOM alert #4711" with the signing secret, bot token and users file', async (t) => {
    const dir = join(work.path, 'serve-slack');
    await mkdir(dir);
    const token = randomBytes(32).toString('hex');
    const secret = randomBytes(16).toString('hex');
    const tokens = join(dir, 'heapcap.tokens.yaml');
    await writeFile(tokens, `tokens:\n  - name: oncall-runbook\n    sha256: "${createHash('sha256').update(token).digest('hex')}"\n    scopes: [captures:read, captures:write, artifacts:read]\n`);
    const users = join(dir, 'heapcap.slack-users.yaml');
    await writeFile(users, 'grants:\n  - name: payments-oncall\n    team: T0TEST\n    users: [U0ONCALL]\n    scopes: [captures:read, captures:write, artifacts:read]\n');
    const slack = await startSlackStandIn();
    t.after(() => slack.close());
    const serve = await startHeapcap(['serve'], {
      cwd: dir,
      env: {
        HEAPCAP_REDIS_URL: redis.url,
        HEAPCAP_PORT: FREE_PORT,
        HEAPCAP_TARGETS_FILE: await targetsFile(dir),
        HEAPCAP_TOKENS_FILE: tokens,
        HEAPCAP_SLACK_USERS_FILE: users,
        HEAPCAP_SLACK_SIGNING_SECRET: secret,
        HEAPCAP_SLACK_BOT_TOKEN: 'xoxb-0000-readme-test',
        HEAPCAP_SLACK_API_URL: slack.apiUrl,
        // The loopback stand-in answers for Slack's response_url hosts (defect 5 allows only those).
        HEAPCAP_SLACK_RESPONSE_HOSTS: slack.origin,
      },
    });
    t.after(() => serve.stop());
    const hook = slack.hook();
    const body = slashCommandBody({ text: 'capture checkout-api "OOM alert #4711"', response_url: hook.url });
    const ack = await fetch(`${serve.url}/slack/commands`, { method: 'POST', headers: slackSign(secret, body), body, signal: AbortSignal.timeout(30_000) });
    assert.equal(ack.status, 200);
    assert.match(((await ack.json()) as { text: string }).text, /of `checkout-api` is queued/);
    const [result] = await hook.waitFor(1);
    const text = JSON.stringify(result!.body);
    assert.match(text, /checkout-api: heap snapshot succeeded/);
    assert.match(text, /OOM alert #4711/);
    const link = /<([^|>]+)\|Download the snapshot>/.exec(text)?.[1];
    assert.ok(link !== undefined && link.startsWith(serve.url), text);
    const id = /\/v1\/captures\/([0-9A-Z]+)\/artifact/.exec(link)?.[1];
    await downloadSnapshot(serve.url, id!, token);
  });

  void test('serve from a copy of dist/ and bin/ alone (no sources, no node_modules), as the image ships it', async (t) => {
    const shipped = join(work.path, 'shipped');
    await cp(join(REPO_ROOT, 'dist'), join(shipped, 'dist'), { recursive: true });
    await cp(HEAPCAP_BIN, join(shipped, 'bin/heapcap'));
    assert.deepEqual((await readdir(shipped)).sort(), ['bin', 'dist']);
    const dir = join(work.path, 'shipped-cwd');
    await mkdir(dir);
    const env = { HEAPCAP_REDIS_URL: redis.url, HEAPCAP_PORT: FREE_PORT, HEAPCAP_TARGETS_FILE: await targetsFile(dir) };
    const serve: RunningHeapcap = await startHeapcap(['serve', '--dev'], { cwd: dir, env, bin: join(shipped, 'bin/heapcap') });
    t.after(() => serve.stop());
    const res = await call(`${serve.url}/v1/captures?wait=60`, { method: 'POST', body: { target: 'checkout-api', force: true } });
    const body = (await res.json()) as { capture: { id: string; status: string } };
    assert.equal(body.capture.status, 'succeeded', JSON.stringify(body));
    await downloadSnapshot(serve.url, body.capture.id);
    assert.equal((await call(`${serve.url}/docs/static/index.html`)).status, 200, 'Swagger UI assets ship in dist/');
  });
});

void describe('README: the quick start', () => {
  void test('npm run demo -- --once: the demo target, heapcap serve --dev and a capture through curl', async () => {
    const res = await runCommand('npm', ['run', 'demo', '--', '--once'], {
      // Port 0: serve binds any free port and the demo prints what it got. A port picked free here was taken
      // during bootstrap.sh once (EADDRINUSE), by another file's connection.
      env: { HEAPCAP_REDIS_URL: redis.url, HEAPCAP_PORT: '0', CI: 'true' },
      timeoutMs: 180_000,
    });
    assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`);
    assert.match(res.stdout, /HTTP 200: capture \S+ succeeded/);
    assert.match(res.stdout, /On disk: \.\/data\/captures\/demo-leaky-service\/\S+ \(\d+\.\d MiB\)/);
    // One unit rule (issue 40): sizes in KiB/MiB, never a decimal MB beside them.
    assert.doesNotMatch(res.stdout, /\d ?[KMGT]B\b/);
    assert.match(res.stdout, /stopped: heapcap serve, demo target/);
  });

  void test('npm run demo: it keeps serving and ends by printing the console URL, signed in; Ctrl-C stops everything', async (t) => {
    // --serve: no terminal here. Its own process group, so SIGINT reaches npm, the shell and the demo as a terminal's Ctrl-C does.
    const demo = spawn('npm', ['run', 'demo', '--', '--serve'], {
      cwd: REPO_ROOT,
      env: commandEnv({ HEAPCAP_REDIS_URL: redis.url, HEAPCAP_PORT: '0' }),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const group = (sig: NodeJS.Signals): void => {
      if (demo.exitCode === null && demo.signalCode === null) process.kill(-demo.pid!, sig);
    };
    const unregister = onProcessExit(() => group('SIGKILL'));
    t.after(() => {
      group('SIGKILL');
      unregister();
    });
    const exited = new Promise<string>((resolve) => demo.once('exit', (code, sig) => resolve(String(sig ?? code))));
    const out = new OutputLog(demo.stdout);
    const err = new OutputLog(demo.stderr);
    const line = await waitFor(
      () => {
        if (demo.exitCode !== null) throw new GiveUp(`npm run demo exited with ${demo.exitCode}\n${out.text()}\n${err.text()}`);
        return out.lines().find((l) => l.startsWith('Console (signed in as dev): '));
      },
      { timeoutMs: 180_000, intervalMs: 100, what: 'npm run demo to print the console URL' },
    );
    assert.equal(out.lines().at(-1), line, 'the console URL is the last line');
    const url = new URL(line.slice('Console (signed in as dev): '.length));
    assert.equal(url.pathname, '/ui/');
    assert.equal(url.hash, '#/targets/demo-leaky-service');
    // The page and what it asks first: who is signed in (no cookie, no sign-in: --dev).
    const page = await fetch(url);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<script[^>]+src="\/ui\/assets\//);
    const session = (await (await fetch(new URL('/v1/session', url))).json()) as { signedIn: boolean; name: string };
    assert.deepEqual([session.signedIn, session.name], [true, 'dev']);
    const captures = (await (await fetch(new URL('/v1/captures?target=demo-leaky-service', url))).json()) as { items: { status: string }[] };
    assert.equal(captures.items[0]?.status, 'succeeded', 'the demo capture the console opens on');
    group('SIGINT');
    // npm ends by the signal, as after a terminal's Ctrl-C; the demo under it stops what it started.
    assert.ok(['0', 'SIGINT'].includes(await exited), `${out.text()}\n${err.text()}`);
    assert.match(out.text(), /SIGINT: stopping…\nstopped: heapcap serve, demo target/);
    await assert.rejects(fetch(url, { signal: AbortSignal.timeout(5_000) }), 'the console is gone with the service');
  });
});
