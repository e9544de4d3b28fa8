/**
 * The Slack endpoints in process (inject): mounted only with a signing secret,
 * raw-body handling in their own scope, user-group grants resolved through
 * the Web API (a loopback stand-in) and cached, the 3-second budget (a slow
 * answer becomes "working on it" and follows through the response_url), the
 * Slack users file and the start-up checks, and the OpenAPI entries.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { pino } from 'pino';
import { parseConfig } from '@heapcap/config';
import { StartupError } from '@heapcap/service';
import { SlackReplies, SlackWebApi } from '@heapcap/slack';
import { createTestWorld, slackSign, slashCommandBody, startRedis, startSlackStandIn, tmpDir, type RedisServer, type SlackStandIn, type TestWorld, type TmpDir } from '@heapcap/testkit';
import { buildApp, type ApiInstance } from '../src/index.ts';
import { SlackAuthorizer } from '../src/auth/slack-auth.ts';
import { parseSlackUsers } from '../src/auth/slack-users.ts';
import { prepareSlack, type SlackDeps } from '../src/slack-setup.ts';

const SECRET = 'in-process-signing-secret-0123456';

let redis: RedisServer;
let slack: SlackStandIn;
let world: TestWorld;
let dir: TmpDir;

before(async () => {
  redis = await startRedis();
  slack = await startSlackStandIn();
  world = await createTestWorld(redis.url, { targets: [{ id: 'demo', kind: 'node', inspect: '127.0.0.1:9', labels: {} }] });
  dir = await tmpDir('heapcap-slack-api');
});
after(async () => {
  await world?.cleanup();
  await slack?.close();
  await redis?.stop();
  await dir?.cleanup();
});

const GROUP_GRANTS = parseSlackUsers(`grants:
  - name: sre-group
    team: T0TEST
    groups: [S0SRE]
    scopes: [captures:read]
`);

/** An API on the world's queue, in dev auth, with Slack when `slackDeps` is given. */
async function app(slackDeps?: SlackDeps): Promise<ApiInstance> {
  const a = await buildApp({ config: parseConfig({}), queue: world.queue, sink: world.store, auth: { kind: 'dev' }, logger: pino({ level: 'silent' }), slack: slackDeps });
  world.onCleanup(() => a.close());
  await a.ready();
  return a;
}

function groupDeps(): SlackDeps {
  const web = new SlackWebApi({ token: 'xoxb-test-bot', apiUrl: slack.apiUrl, log: pino({ level: 'silent' }) });
  const replies = new SlackReplies(world.queue, { attempts: 3, baseDelayMs: 50 });
  world.onCleanup(() => replies.close());
  return {
    signingSecret: SECRET,
    authorizer: new SlackAuthorizer(GROUP_GRANTS, (g, t) => web.userGroupMembers(g, t)),
    replies,
    links: { publicUrl: 'http://heapcap.test', mode: 'api', ttlSeconds: 900 },
    // The stand-in's hooks, and a port nothing listens on for answers that never follow up.
    responseOrigins: [slack.origin, 'http://127.0.0.1:9'],
  };
}

function signed(a: ApiInstance, body: string, headers: Record<string, string> = {}) {
  return a.inject({ method: 'POST', url: '/slack/commands', headers: { ...slackSign(SECRET, body), ...headers }, payload: body });
}

void test('without a signing secret the Slack paths do not exist; with one they are in the OpenAPI document', async () => {
  const off = await app();
  const body = slashCommandBody({ text: 'help', response_url: 'http://127.0.0.1:9/x' });
  const res = await off.inject({ method: 'POST', url: '/slack/commands', headers: slackSign(SECRET, body), payload: body });
  assert.equal(res.statusCode, 404);
  assert.equal((await off.inject({ method: 'POST', url: '/slack/interactions', payload: '' })).statusCode, 404);

  const on = await app(groupDeps());
  const doc = (await on.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, { post?: { operationId?: string; requestBody?: { content: Record<string, unknown> }; security?: unknown[] } }> }>();
  for (const [path, operationId] of [['/slack/commands', 'slackCommand'], ['/slack/interactions', 'slackInteraction']] as const) {
    const op = doc.paths[path]?.post;
    assert.ok(op !== undefined, `${path} documented`);
    assert.equal(op.operationId, operationId, `${path}: the operationId docs/api.md promises`);
    assert.deepEqual(Object.keys(op.requestBody?.content ?? {}), ['application/x-www-form-urlencoded']);
    assert.deepEqual(op.security, []);
  }
});

void test('the raw-body parser stays in the Slack scope: JSON elsewhere still parses; a signed JSON body to Slack is 415; ssl_check is answered', async () => {
  const a = await app(groupDeps());
  const json = JSON.stringify({ target: 'demo' });
  const rest = await a.inject({ method: 'POST', url: '/v1/captures', headers: { 'content-type': 'application/json' }, payload: json });
  assert.equal(rest.statusCode, 202, rest.body);
  const slackJson = await a.inject({ method: 'POST', url: '/slack/commands', headers: { ...slackSign(SECRET, json), 'content-type': 'application/json' }, payload: json });
  assert.equal(slackJson.statusCode, 415, slackJson.body);
  // Unsigned JSON is refused for its signature first (nothing is parsed before the check).
  assert.equal((await a.inject({ method: 'POST', url: '/slack/commands', headers: { 'content-type': 'application/json' }, payload: json })).statusCode, 401);
  const ssl = await signed(a, 'ssl_check=1&token=legacy');
  assert.equal(ssl.statusCode, 200, ssl.body);
  const bad = await signed(a, 'team_id=T0TEST&text=help');
  assert.equal(bad.statusCode, 400, 'a verified but incomplete command is a validation error, not a 500');
  assert.equal(bad.json<{ error: { code: string } }>().error.code, 'validation_failed');
});

void test('user-group grants: members (asked of the Web API once a minute) may read, others are refused', async () => {
  slack.answer('usergroups.users.list', (f) => ({ body: { ok: true, users: f['usergroup'] === 'S0SRE' ? ['U0SRE'] : [] } }));
  const a = await app(groupDeps());
  const calls = slack.calls('usergroups.users.list').length;
  const member = await signed(a, slashCommandBody({ text: 'targets', user_id: 'U0SRE', response_url: 'http://127.0.0.1:9/x' }));
  assert.equal(member.statusCode, 200);
  assert.match(member.body, /`demo` node/);
  const other = await signed(a, slashCommandBody({ text: 'targets', user_id: 'U0DEV', response_url: 'http://127.0.0.1:9/x' }));
  assert.match(other.json<{ text: string }>().text, /`targets` needs the `captures:read` scope/);
  const lookups = slack.calls('usergroups.users.list').slice(calls);
  assert.equal(lookups.length, 1, 'one lookup for both commands (cached)');
  assert.deepEqual([lookups[0]?.body['usergroup'], lookups[0]?.body['team_id'], lookups[0]?.headers.authorization], ['S0SRE', 'T0TEST', 'Bearer xoxb-test-bot']);
});

void test("past the 3-second budget: 'working on it' at once, the answer follows through the response_url", async () => {
  slack.answer('usergroups.users.list', () => ({ body: { ok: true, users: ['U0SLOW'] }, delayMs: 3_000 }));
  const a = await app(groupDeps());
  const hook = slack.hook();
  const t0 = performance.now();
  const res = await signed(a, slashCommandBody({ text: 'targets', user_id: 'U0SLOW', response_url: hook.url }));
  const ms = performance.now() - t0;
  assert.equal(res.statusCode, 200);
  assert.match(res.json<{ text: string }>().text, /Working on it/);
  assert.ok(ms < 2_900, `answered in ${ms.toFixed(0)} ms`);
  const [post] = await hook.waitFor(1, { timeoutMs: 20_000 });
  assert.equal((post!.body as { response_type: string }).response_type, 'ephemeral');
  assert.match(JSON.stringify(post!.body), /`demo` node/);
});

void test('the Slack users file: good, and each mistake named', () => {
  const grants = parseSlackUsers('grants:\n  - { name: a, team: T1, users: ["*"], scopes: [captures:read] }\n');
  assert.deepEqual(grants[0]?.users, ['*']);
  assert.throws(() => parseSlackUsers('grants:\n  - { name: a, team: T1, scopes: [captures:read] }\n'), /a grant needs users or groups/);
  assert.throws(() => parseSlackUsers('grants:\n  - { name: a, team: t1, users: [U1], scopes: [captures:read] }\n'), /grants\.0\.team: a Slack id in capitals, e.g. T0123ABCD/);
  assert.throws(() => parseSlackUsers('grants:\n  - { name: a, team: T1, users: [U1], scopes: [root] }\n'), /scopes/);
  assert.throws(() => parseSlackUsers('grants:\n  - { name: a, team: T1, users: [U1], scopes: [captures:read] }\n  - { name: a, team: T2, users: [U1], scopes: [captures:read] }\n'), /"a" appears twice/);
  assert.throws(() => parseSlackUsers('tokens: []'), /grants/);
});

void test('start-up: Slack off without a secret; a secret without users file, or groups without a bot token, refuse to start', async () => {
  const log = pino({ level: 'silent' });
  assert.equal(await prepareSlack(parseConfig({}), world.queue, log), undefined);
  await assert.rejects(prepareSlack(parseConfig({ HEAPCAP_SLACK_SIGNING_SECRET: SECRET }), world.queue, log), (err: unknown) => err instanceof StartupError && /HEAPCAP_SLACK_USERS_FILE is not/.test(err.message));
  const groups = join(dir.path, 'groups.yaml');
  await writeFile(groups, 'grants:\n  - { name: sre, team: T1, groups: [S1], scopes: [captures:read] }\n');
  await assert.rejects(prepareSlack(parseConfig({ HEAPCAP_SLACK_SIGNING_SECRET: SECRET, HEAPCAP_SLACK_USERS_FILE: groups }), world.queue, log), /set HEAPCAP_SLACK_BOT_TOKEN/);
  await assert.rejects(prepareSlack(parseConfig({ HEAPCAP_SLACK_SIGNING_SECRET: SECRET, HEAPCAP_SLACK_USERS_FILE: join(dir.path, 'missing.yaml') }), world.queue, log), /cannot read the Slack users file .*missing\.yaml: ENOENT/);
  const ok = await prepareSlack(parseConfig({ HEAPCAP_SLACK_SIGNING_SECRET: SECRET, HEAPCAP_SLACK_USERS_FILE: groups, HEAPCAP_SLACK_BOT_TOKEN: 'xoxb-1-2-abc' }), world.queue, log);
  assert.ok(ok !== undefined);
  await ok.replies.close();
});

void test('defect 5: a signed request whose response_url is not Slack\'s is refused at intake (400 response_url_not_allowed), nothing posted', async () => {
  const a = await app(groupDeps());
  const before = (await world.queue.depth()).records;
  const refused = [
    `http://127.0.0.1:${redis.port}/`,
    'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
    'http://localhost:6379/',
    'https://hooks.slack.com.evil.example/commands/T0TEST/1/x',
    'https://user:pw@hooks.slack.com/commands/T0TEST/1/x',
    'http://hooks.slack.com/commands/T0TEST/1/x',
    'https://hooks.slack.com:8443/commands/T0TEST/1/x',
  ];
  for (const url of refused) {
    const res = await signed(a, slashCommandBody({ text: 'capture demo', user_id: 'U0SRE', response_url: url }));
    assert.equal(res.statusCode, 400, `${url}: ${res.body}`);
    const body = res.json<{ error: { code: string; message: string } }>();
    assert.equal(body.error.code, 'response_url_not_allowed', url);
    assert.match(body.error.message, /is not one of HEAPCAP_SLACK_RESPONSE_HOSTS|carries credentials/, url);
  }
  // Interactions carry their response_url in the payload: refused the same way.
  const payload = JSON.stringify({ type: 'block_actions', user: { id: 'U0SRE', team_id: 'T0TEST' }, team: { id: 'T0TEST' }, channel: { id: 'C1' }, response_url: 'http://169.254.169.254/x', trigger_id: '1', actions: [{ action_id: 'heapcap_capture_again', value: 'demo', block_id: 'b' }] });
  const form = new URLSearchParams({ payload }).toString();
  const click = await a.inject({ method: 'POST', url: '/slack/interactions', headers: slackSign(SECRET, form), payload: form });
  assert.equal(click.statusCode, 400, click.body);
  assert.equal(click.json<{ error: { code: string } }>().error.code, 'response_url_not_allowed');
  assert.deepEqual((await world.queue.depth()).records, before, 'nothing enqueued');
  // An allowed origin still works.
  const hook = slack.hook();
  const ok = await signed(a, slashCommandBody({ text: 'help', response_url: hook.url }));
  assert.equal(ok.statusCode, 200, ok.body);
});

void test('defect 5: HEAPCAP_SLACK_RESPONSE_HOSTS: Slack\'s own hosts by default, hosts or origins, refused when malformed', () => {
  assert.deepEqual(parseConfig({}).slack.responseOrigins, ['https://hooks.slack.com', 'https://hooks.slack-gov.com']);
  assert.deepEqual(parseConfig({ HEAPCAP_SLACK_RESPONSE_HOSTS: 'hooks.slack.com, http://127.0.0.1:8099,https://proxy.example:443' }).slack.responseOrigins, ['https://hooks.slack.com', 'http://127.0.0.1:8099', 'https://proxy.example']);
  assert.throws(() => parseConfig({ HEAPCAP_SLACK_RESPONSE_HOSTS: 'https://hooks.slack.com/commands' }), /HEAPCAP_SLACK_RESPONSE_HOSTS/);
  assert.throws(() => parseConfig({ HEAPCAP_SLACK_RESPONSE_HOSTS: ' , ' }), /HEAPCAP_SLACK_RESPONSE_HOSTS/);
});

void test('defect 9: the Slack 413 names the route\'s own limit (128 KiB for commands), not the app\'s 64 KiB', async () => {
  const a = await app(groupDeps());
  const body = slashCommandBody({ text: `capture demo ${'x'.repeat(140 * 1024)}`, response_url: slack.hook().url });
  const res = await signed(a, body);
  assert.equal(res.statusCode, 413, res.body);
  const err = res.json<{ error: { code: string; message: string; details: { limitBytes: number } } }>().error;
  assert.equal(err.code, 'payload_too_large');
  assert.equal(err.details.limitBytes, 128 * 1024);
  assert.match(err.message, /larger than 131072 bytes/);
});
