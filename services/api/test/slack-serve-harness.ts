/**
 * A running `bin/heapcap serve` with Slack configured, for the Slack tests:
 * real Redis, a real Node target registered as `demo`, bearer tokens, a Slack
 * users file, and a loopback stand-in for Slack (response_urls and the Web
 * API). Requests are signed as Slack signs them.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createQueue, type AuditEntry, type CaptureRecord, type HeapcapQueue } from '@heapcap/state';
import {
  fixturePath,
  FREE_PORT,
  freePort,
  slackSign,
  slashCommandBody,
  startHeapcap,
  startNodeTarget,
  startRedis,
  startSlackStandIn,
  tmpDir,
  waitFor,
  type NodeTarget,
  type RedisServer,
  type RunningHeapcap,
  type SlackStandIn,
  type StandInHook,
  type TmpDir,
} from '@heapcap/testkit';
import { hashToken } from '../src/index.ts';

/** The app's signing secret (it must never show up in the logs). */
export const SIGNING_SECRET = 'e2e-signing-secret-7d3f9a0b5c1e4f62';
export const BOT_TOKEN = 'xoxb-1111-2222-e2ebottokenvalue';
/** A bearer token with artifacts:read: "the configured auth" of a download link. */
export const RUNBOOK_TOKEN = 'tok-e2e-runbook-5b8d2c';

/** Users of the test workspace T0TEST. */
export const USERS = { oncall: 'U0ONCALL', reader: 'U0READER' } as const;

const USERS_FILE = `grants:
  - name: oncall
    team: T0TEST
    users: [${USERS.oncall}]
    scopes: [captures:read, captures:write, artifacts:read]
  - name: everyone-reads
    team: T0TEST
    users: ["*"]
    scopes: [captures:read]
`;

/** A Slack answer to a signed request. */
export interface SlackAnswer {
  status: number;
  body: { response_type?: string; text?: string; blocks?: unknown[]; error?: { code: string; details: Record<string, unknown> } } | null;
  /** Wall-clock time to the answer. */
  ms: number;
}

/** Everything a Slack test file uses. */
export interface SlackServe {
  serve: RunningHeapcap;
  slack: SlackStandIn;
  queue: HeapcapQueue;
  redis: RedisServer;
  /** POST a signed `/heapcap TEXT` (with `fields` overriding the payload) and a fresh response_url. */
  command(text: string, options?: { fields?: Record<string, string>; hook?: StandInHook }): Promise<SlackAnswer & { hook: StandInHook }>;
  /** POST raw bytes to a Slack endpoint with the given headers. */
  post(path: string, body: string, headers: Record<string, string>): Promise<SlackAnswer>;
  /** POST a signed interaction payload. */
  interaction(payload: unknown): Promise<SlackAnswer>;
  /** The record once it has ended. */
  finished(id: string): Promise<CaptureRecord>;
  /** serve's JSON log lines, parsed (stdout). */
  logLines(): Record<string, unknown>[];
  /** Every line serve wrote, stdout and stderr. */
  allOutput(): string;
  /** Audit entries newer than `since` (an entry id), oldest first. */
  auditSince(since: string | undefined): Promise<AuditEntry[]>;
  close(): Promise<void>;
}

/** The capture id in an acknowledgement. */
export function ackedId(answer: SlackAnswer): string {
  const id = /Capture `([0-9A-Z]{26})`|\(`([0-9A-Z]{26})`,/.exec(answer.body?.text ?? '');
  const found = id?.[1] ?? id?.[2];
  if (found === undefined) throw new Error(`no capture id in ${JSON.stringify(answer.body)}`);
  return found;
}

/** Start serve with Slack on; `env` adds or overrides variables. */
export async function startSlackServe(env: Record<string, string> = {}): Promise<SlackServe> {
  const redis = await startRedis();
  const dir: TmpDir = await tmpDir('heapcap-slack-e2e');
  let target: NodeTarget | undefined;
  let slack: SlackStandIn | undefined;
  let serve: RunningHeapcap | undefined;
  let queue: HeapcapQueue | undefined;
  const close = async (): Promise<void> => {
    await serve?.stop();
    await queue?.close();
    await slack?.close();
    await target?.kill();
    await redis.stop();
    await dir.cleanup();
  };
  try {
    target = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '5' } });
    slack = await startSlackStandIn();
    const targetsFile = join(dir.path, 'targets.yaml');
    // `gone`: nothing listens there (a capture of it fails with target_unreachable).
    await writeFile(targetsFile, `targets:\n  - id: demo\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n    labels: { service: demo }\n  - id: gone\n    kind: node\n    inspect: 127.0.0.1:${await freePort()}\n`);
    const tokensFile = join(dir.path, 'tokens.yaml');
    await writeFile(tokensFile, `tokens:\n  - name: runbook\n    sha256: "${hashToken(RUNBOOK_TOKEN)}"\n    scopes: [captures:read, captures:write, artifacts:read]\n`);
    const usersFile = join(dir.path, 'slack-users.yaml');
    await writeFile(usersFile, USERS_FILE);
    serve = await startHeapcap(['serve'], {
      env: {
        HEAPCAP_REDIS_URL: redis.url,
        HEAPCAP_PORT: FREE_PORT,
        HEAPCAP_STORAGE: `file://${join(dir.path, 'captures')}`,
        HEAPCAP_TARGETS_FILE: targetsFile,
        HEAPCAP_TOKENS_FILE: tokensFile,
        HEAPCAP_SLACK_SIGNING_SECRET: SIGNING_SECRET,
        HEAPCAP_SLACK_USERS_FILE: usersFile,
        HEAPCAP_SLACK_BOT_TOKEN: BOT_TOKEN,
        HEAPCAP_SLACK_API_URL: slack.apiUrl,
        // The stand-in's hooks are response_urls on loopback: allowed here only (Slack's own hosts by default).
        HEAPCAP_SLACK_RESPONSE_HOSTS: slack.origin,
        // Retries in a test's time: 200 ms, 400 ms, 800 ms, …
        HEAPCAP_SLACK_RETRY_MS: '200',
        // The most talkative level: the secrets must not appear even there.
        HEAPCAP_LOG_LEVEL: 'debug',
        ...env,
      },
    });
    queue = createQueue({ redisUrl: redis.url });
  } catch (err) {
    await close();
    throw err;
  }
  const s = serve;
  const stand = slack;
  const q = queue;
  const post = async (path: string, body: string, headers: Record<string, string>): Promise<SlackAnswer> => {
    const t0 = performance.now();
    const res = await fetch(`${s.url}${path}`, { method: 'POST', headers, body, signal: AbortSignal.timeout(30_000) });
    const text = await res.text();
    return { status: res.status, body: text === '' ? null : (JSON.parse(text) as SlackAnswer['body']), ms: performance.now() - t0 };
  };
  return {
    serve: s,
    slack: stand,
    queue: q,
    redis,
    async command(text, options = {}) {
      const hook = options.hook ?? stand.hook();
      const body = slashCommandBody({ text, response_url: hook.url, ...options.fields });
      return { ...(await post('/slack/commands', body, slackSign(SIGNING_SECRET, body))), hook };
    },
    post,
    interaction(payload) {
      const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
      return post('/slack/interactions', body, slackSign(SIGNING_SECRET, body));
    },
    async finished(id) {
      return waitFor(
        async () => {
          const r = await q.getCapture(id);
          return r !== null && ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : undefined;
        },
        { timeoutMs: 90_000, intervalMs: 100, what: `capture ${id} to end` },
      );
    },
    logLines: () => s.stdout.lines().filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>),
    allOutput: () => [...s.stdout.lines(), ...s.stderr.lines()].join('\n'),
    async auditSince(since) {
      const all = (await q.audit.recent(10_000)).reverse();
      const at = since === undefined ? -1 : all.findIndex((e) => e.id === since);
      return all.slice(at + 1);
    },
    close,
  };
}

/** The newest audit entry id (to read only what a test adds). */
export async function auditMark(queue: HeapcapQueue): Promise<string | undefined> {
  return (await queue.audit.recent(1))[0]?.id;
}
