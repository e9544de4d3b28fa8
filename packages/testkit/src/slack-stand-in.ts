/**
 * Slack's servers are not reachable from tests: this loopback HTTP server
 * stands in for them. `hook()` makes a response_url that answers with a
 * scripted sequence of statuses and records every post; `/api/<method>`
 * answers the Web API calls heapcap makes (chat.postMessage,
 * usergroups.users.list) and records them. `slackSign` signs a request the way
 * Slack does (an implementation of its own, not heapcap's).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from './proc.ts';

/** One request the stand-in received. */
export interface StandInPost {
  /** The parsed JSON body (response_url posts), or the form/JSON fields of a Web API call. */
  body: Record<string, unknown>;
  headers: IncomingMessage['headers'];
  /** The status the stand-in answered. */
  status: number;
}

/** A response_url of the stand-in. */
export interface StandInHook {
  url: string;
  /** Every post so far, in order (failed ones included). */
  posts(): StandInPost[];
  /** Posts answered 2xx. */
  delivered(): StandInPost[];
  /** Resolves once `n` posts were answered 2xx (or `n` posts at all with `any`). */
  waitFor(n: number, options?: { timeoutMs?: number; any?: boolean }): Promise<StandInPost[]>;
}

/** How a Web API method answers: its JSON body (and an optional delay, ms). */
export type WebApiAnswer = (fields: Record<string, unknown>) => { body: Record<string, unknown>; delayMs?: number };

/** The running stand-in. */
export interface SlackStandIn {
  /** Base URL of the Web API (HEAPCAP_SLACK_API_URL), ending in `/api/`. */
  apiUrl: string;
  /** The origin of every hook() URL: what HEAPCAP_SLACK_RESPONSE_HOSTS must allow for heapcap to post to them. */
  origin: string;
  /** A new response_url answering `statuses` in turn (then 200 for ever; `'always-500'` never stops failing). */
  hook(statuses?: number[] | 'always-500'): StandInHook;
  /** Calls of one Web API method, in order. */
  calls(method: string): StandInPost[];
  /** Replace how `method` answers (default: `{ ok: true }`). */
  answer(method: string, answer: WebApiAnswer): void;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function parseFields(text: string, type: string | undefined): Record<string, unknown> {
  if ((type ?? '').includes('json')) return JSON.parse(text) as Record<string, unknown>;
  const fields: Record<string, unknown> = Object.fromEntries(new URLSearchParams(text));
  // The Web API client form-encodes nested values as JSON strings.
  for (const [k, v] of Object.entries(fields)) if (typeof v === 'string' && /^[[{]/.test(v)) fields[k] = JSON.parse(v) as unknown;
  return fields;
}

/** Start the stand-in on a free loopback port. */
export async function startSlackStandIn(): Promise<SlackStandIn> {
  const hooks = new Map<string, { script: number[] | 'always-500'; posts: StandInPost[] }>();
  const calls = new Map<string, StandInPost[]>();
  const answers = new Map<string, WebApiAnswer>();
  const server = createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', 'http://localhost').pathname;
      const text = await readBody(req);
      const hook = hooks.get(path);
      if (hook !== undefined) {
        const status = hook.script === 'always-500' ? 500 : (hook.script.shift() ?? 200);
        hook.posts.push({ body: JSON.parse(text) as Record<string, unknown>, headers: req.headers, status });
        res.writeHead(status, { 'content-type': 'text/plain' });
        res.end(status < 300 ? 'ok' : 'stand-in failure');
        return;
      }
      const method = /^\/api\/(.+)$/.exec(path)?.[1];
      if (method === undefined) {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('expired_url');
        return;
      }
      const fields = parseFields(text, req.headers['content-type']);
      const answer: ReturnType<WebApiAnswer> = (answers.get(method) ?? (() => ({ body: { ok: true } })))(fields);
      if (answer.delayMs !== undefined) await new Promise((r) => setTimeout(r, answer.delayMs));
      const list = calls.get(method) ?? [];
      calls.set(method, list);
      list.push({ body: fields, headers: req.headers, status: 200 });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer.body));
    })().catch((err: unknown) => {
      res.writeHead(500);
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let closed: Promise<void> | undefined;
  return {
    apiUrl: `${base}/api/`,
    origin: base,
    hook(statuses = []) {
      // Shaped like Slack's: /commands/<team>/<id>/<secret>; the secret part is what must never be logged.
      const path = `/commands/T0TEST/${Date.now()}/${randomBytes(12).toString('hex')}`;
      const entry = { script: statuses === 'always-500' ? statuses : [...statuses], posts: [] as StandInPost[] };
      hooks.set(path, entry);
      const delivered = (): StandInPost[] => entry.posts.filter((p) => p.status < 300);
      return {
        url: `${base}${path}`,
        posts: () => [...entry.posts],
        delivered,
        waitFor: (n, options = {}) =>
          waitFor(() => {
            const got = options.any === true ? entry.posts : delivered();
            return got.length >= n ? [...got] : undefined;
          }, { timeoutMs: options.timeoutMs ?? 90_000, intervalMs: 50, what: `${n} post(s) to a response_url` }),
      };
    },
    calls: (method) => [...(calls.get(method) ?? [])],
    answer: (method, answer) => answers.set(method, answer),
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}

/** The headers Slack signs a request with (v0: HMAC-SHA256 of `v0:{ts}:{body}`). */
export function slackSign(secret: string, body: string, timestampS: number = Math.floor(Date.now() / 1000)): Record<string, string> {
  const signature = createHmac('sha256', secret).update(`v0:${timestampS}:${body}`).digest('hex');
  return { 'x-slack-request-timestamp': String(timestampS), 'x-slack-signature': `v0=${signature}`, 'content-type': 'application/x-www-form-urlencoded' };
}

/** A slash command's form body: Slack's fields with test defaults, `overrides` on top. */
export function slashCommandBody(overrides: Record<string, string>): string {
  return new URLSearchParams({
    token: 'legacy-verification-token',
    team_id: 'T0TEST',
    team_domain: 'heapcap-test',
    channel_id: 'C0INCIDENT',
    channel_name: 'incident-4711',
    user_id: 'U0ONCALL',
    user_name: 'oncall',
    command: '/heapcap',
    text: '',
    api_app_id: 'A0HEAPCAP',
    trigger_id: `${Date.now()}.${randomBytes(4).toString('hex')}`,
    ...overrides,
  }).toString();
}
