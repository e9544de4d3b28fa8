/**
 * A real OpenID provider for tests: ORY Hydra v2 (`hydra serve all --dev`,
 * in-memory storage, loopback ports), built by scripts/test-deps.sh, with a
 * small login/consent app standing in for the company's login page (a seam
 * we own). The login page lists the test's users as buttons; consent is
 * given at once, with the user's `groups` and `email` in the id token.
 * The issuer is `http://localhost:<port>`, a different site from the
 * service under test at 127.0.0.1, so cookies cross sites as they do with a
 * real provider.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { OutputLog } from './output-log.ts';
import { freePort, waitFor } from './proc.ts';
import { onProcessExit } from './reaper.ts';

/** Keep in step with scripts/test-deps.sh (HYDRA_VERSION). */
export const HYDRA_VERSION = 'v2.3.0';

/** One person the login page offers. */
export interface OidcTestUser {
  email: string;
  groups: string[];
}

/** Options of {@link startHydra}. */
export interface HydraOptions {
  /** The people on the login page, by subject. */
  users: Record<string, OidcTestUser>;
  /** The relying party's redirect URI (HEAPCAP_PUBLIC_URL/auth/oidc/callback) and where its logout returns. */
  redirectUri: string;
  postLogoutRedirectUri: string;
}

/** A running Hydra with its login/consent app and one registered client. */
export interface HydraServer {
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Times the login page was shown (a remembered person skips it), and logouts accepted. */
  readonly counts: { loginPages: number; logins: number; logouts: number };
  logs(): string;
  /** Stops Hydra and the app. Idempotent. */
  stop(): Promise<void>;
}

/** Path of the Hydra binary: `$HEAPCAP_HYDRA` or the one scripts/test-deps.sh builds under the cache dir. */
export function hydraBinary(): string {
  const cache = process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache');
  const path = process.env['HEAPCAP_HYDRA'] ?? join(cache, 'heapcap', `hydra-${HYDRA_VERSION}`, 'hydra');
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new Error(`Hydra binary not found at ${path}: run \`bash scripts/test-deps.sh\` to build it (or set HEAPCAP_HYDRA)`);
  }
  return path;
}

async function body(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Starts Hydra and its login/consent app on free loopback ports; resolves once the client is registered. */
export async function startHydra(options: HydraOptions): Promise<HydraServer> {
  const binary = hydraBinary();
  // Three ports distinct from each other and from the relying party's (picked before, not yet bound):
  // a port freed a moment ago can be handed out again.
  const taken = new Set([Number(new URL(options.redirectUri).port)]);
  const pick = async (): Promise<number> => {
    for (;;) {
      const p = await freePort();
      if (taken.has(p)) continue;
      taken.add(p);
      return p;
    }
  };
  const [publicPort, adminPort, appPort] = [await pick(), await pick(), await pick()];
  const issuer = `http://localhost:${publicPort}`;
  const admin = `http://127.0.0.1:${adminPort}`;
  const appUrl = `http://localhost:${appPort}`;
  const counts = { loginPages: 0, logins: 0, logouts: 0 };

  const adminCall = async (method: string, path: string, payload?: unknown): Promise<Record<string, unknown>> => {
    const res = await fetch(admin + path, {
      method,
      headers: payload === undefined ? {} : { 'content-type': 'application/json' },
      body: payload === undefined ? null : JSON.stringify(payload),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`hydra admin ${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const redirect = (res: ServerResponse, to: unknown): void => {
    res.writeHead(302, { location: String(to) }).end();
  };

  // The login/consent/logout app: the company's login page, as far as the test is concerned.
  const app = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', appUrl);
      if (url.pathname === '/login' && req.method === 'GET') {
        const challenge = url.searchParams.get('login_challenge') ?? '';
        const login = await adminCall('GET', `/admin/oauth2/auth/requests/login?login_challenge=${encodeURIComponent(challenge)}`);
        // Remembered at the provider: no page, as a company's SSO session does it.
        if (login['skip'] === true) {
          const ok = await adminCall('PUT', `/admin/oauth2/auth/requests/login/accept?login_challenge=${encodeURIComponent(challenge)}`, { subject: login['subject'] });
          return redirect(res, ok['redirect_to']);
        }
        counts.loginPages += 1;
        const buttons = Object.keys(options.users)
          .map((u) => `<button type="submit" name="user" value="${escapeHtml(u)}" data-user="${escapeHtml(u)}">${escapeHtml(u)}</button>`)
          .join('\n');
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
          `<!doctype html><html lang="en"><head><title>Test provider login</title></head><body><main><h1>Who are you?</h1>` +
            `<form method="post" action="/login"><input type="hidden" name="challenge" value="${escapeHtml(challenge)}">${buttons}</form></main></body></html>`,
        );
        return;
      }
      if (url.pathname === '/login' && req.method === 'POST') {
        const form = await body(req);
        const user = form.get('user') ?? '';
        if (options.users[user] === undefined) return void res.writeHead(400).end('unknown user');
        counts.logins += 1;
        const ok = await adminCall('PUT', `/admin/oauth2/auth/requests/login/accept?login_challenge=${encodeURIComponent(form.get('challenge') ?? '')}`, {
          subject: user,
          remember: true,
          remember_for: 3600,
        });
        return redirect(res, ok['redirect_to']);
      }
      if (url.pathname === '/consent') {
        const challenge = url.searchParams.get('consent_challenge') ?? '';
        const consent = await adminCall('GET', `/admin/oauth2/auth/requests/consent?consent_challenge=${encodeURIComponent(challenge)}`);
        const who = options.users[String(consent['subject'])];
        const ok = await adminCall('PUT', `/admin/oauth2/auth/requests/consent/accept?consent_challenge=${encodeURIComponent(challenge)}`, {
          grant_scope: consent['requested_scope'],
          grant_access_token_audience: consent['requested_access_token_audience'],
          session: { id_token: { email: who?.email, groups: who?.groups ?? [] } },
        });
        return redirect(res, ok['redirect_to']);
      }
      if (url.pathname === '/logout') {
        const challenge = url.searchParams.get('logout_challenge') ?? '';
        counts.logouts += 1;
        const ok = await adminCall('PUT', `/admin/oauth2/auth/requests/logout/accept?logout_challenge=${encodeURIComponent(challenge)}`);
        return redirect(res, ok['redirect_to']);
      }
      res.writeHead(404).end();
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`login app: ${(err as Error).message}`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    app.once('error', reject);
    app.listen(appPort, '127.0.0.1', resolve);
  });

  const proc = spawn(binary, ['serve', 'all', '--dev'], {
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      DSN: 'memory',
      URLS_SELF_ISSUER: issuer,
      URLS_LOGIN: `${appUrl}/login`,
      URLS_CONSENT: `${appUrl}/consent`,
      URLS_LOGOUT: `${appUrl}/logout`,
      SECRETS_SYSTEM: 'heapcap-test-system-secret-0123456789',
      SERVE_PUBLIC_HOST: '127.0.0.1',
      SERVE_PUBLIC_PORT: String(publicPort),
      SERVE_ADMIN_HOST: '127.0.0.1',
      SERVE_ADMIN_PORT: String(adminPort),
      LOG_LEVEL: 'warn',
      // No telemetry: the machine reaches registries, nothing else.
      SQA_OPT_OUT: 'true',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = new OutputLog(proc.stdout);
  const err = new OutputLog(proc.stderr);
  const logs = (): string => `${out.text()}${err.text()}`;
  const unregister = onProcessExit(() => proc.kill('SIGKILL'));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      proc.kill('SIGTERM');
      const killer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(killer);
      unregister();
      await new Promise<void>((resolve) => app.close(() => resolve()));
    })());

  try {
    // An exit (a bad setting, a binary without SQLite) ends the wait at once, with Hydra's own words.
    const died = exited.then(() => {
      throw new Error(`hydra exited with ${proc.exitCode}: ${logs()}`);
    });
    await Promise.race([
      died,
      waitFor(async () => (await fetch(`${admin}/health/ready`, { signal: AbortSignal.timeout(2_000) })).ok, { timeoutMs: 60_000, intervalMs: 100, what: `hydra to be ready (${logs()})` }),
    ]);
    died.catch(() => {});
    const clientSecret = 'heapcap-test-client-secret';
    const created = await adminCall('POST', '/admin/clients', {
      client_name: 'heapcap',
      client_secret: clientSecret,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      scope: 'openid email profile groups',
      redirect_uris: [options.redirectUri],
      post_logout_redirect_uris: [options.postLogoutRedirectUri],
      token_endpoint_auth_method: 'client_secret_basic',
    });
    return { issuer, clientId: String(created['client_id']), clientSecret, counts, logs, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
