/**
 * OpenID Connect sign-in to the console, end to end: Chromium against
 * `bin/heapcap serve` and a real OpenID provider (ORY Hydra, with the test
 * kit's login page standing in for the company's). Token sign-in to the
 * console is off here (HEAPCAP_CONSOLE_TOKEN_SIGNIN=off); bearer tokens still
 * work for the API. Covers: sign-in returning to the page a link pointed at,
 * a person with no mapped group refused with a page that says why, a tampered
 * state, a callback replayed and one forwarded to another browser, a Slack
 * link forwarded to other people, an expired session, sign-out (with the
 * provider's logout), and the audit entries of each.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import puppeteer, { type Browser, type BrowserContext, type HTTPRequest, type Page } from 'puppeteer-core';
import {
  CHROMIUM_FLAGS,
  chromiumBinary,
  freePort,
  REPO_ROOT,
  startHeapcap,
  startHydra,
  startNodeTarget,
  startRedis,
  tmpDir,
  type HydraServer,
  type NodeTarget,
  type RedisServer,
  type RunningHeapcap,
  type TmpDir,
} from '@heapcap/testkit';
import { hashToken } from '@heapcap/api';

declare const location: { hash: string; href: string };

const ADMIN_TOKEN = 'oidc-test-admin-4be2d1f0';
const USERS = {
  alice: { email: 'alice@example.com', groups: ['staff', 'heapcap-oncall'] },
  bob: { email: 'bob@example.com', groups: ['heapcap-readers'] },
  mallory: { email: 'mallory@example.com', groups: ['contractors'] },
};

let redis: RedisServer;
let dir: TmpDir;
let target: NodeTarget;
let hydra: HydraServer;
let serve: RunningHeapcap;
let browser: Browser;
let captureId: string;

/** A fresh browser profile: its own cookies, at heapcap and at the provider. */
async function freshContext(): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  return { context, page };
}

/** Presses "Sign in with Test SSO" and, when the provider shows its login page, picks `user`. */
async function signInAt(page: Page, user: keyof typeof USERS | undefined): Promise<void> {
  await page.waitForSelector('[data-testid=sign-in-oidc]');
  await Promise.all([page.waitForNavigation(), page.click('[data-testid=sign-in-oidc]')]);
  if (user !== undefined) {
    await page.waitForSelector(`button[data-user=${user}]`).catch(async (err: unknown) => {
      const text = await page.content().catch(() => '(no content)');
      throw new Error(`no login button for ${user} at ${page.url()}: ${text.slice(0, 600)}\nprovider: ${hydra.logs().slice(-1500)}`, { cause: err });
    });
    await Promise.all([page.waitForNavigation(), page.click(`button[data-user=${user}]`)]);
  }
}

/**
 * Starts a sign-in as `user` and stops the browser at heapcap's callback
 * (the request is aborted): the callback URL, with its code and state, not
 * yet used. A person the provider remembers is not shown its login page.
 */
async function callbackUrlOf(page: Page, user: keyof typeof USERS): Promise<string> {
  await page.goto(`${serve.url}/ui/`);
  await page.setRequestInterception(true);
  let callback: string | undefined;
  const onRequest = (r: HTTPRequest): void => {
    if (r.url().startsWith(`${serve.url}/auth/oidc/callback`)) {
      callback = r.url();
      void r.abort();
    } else void r.continue();
  };
  page.on('request', onRequest);
  try {
    await page.waitForSelector('[data-testid=sign-in-oidc]');
    await page.click('[data-testid=sign-in-oidc]');
    // The login page, or (a person the provider remembers) straight to the callback the handler catches.
    const button = `button[data-user=${user}]`;
    const deadline = Date.now() + 30_000;
    let clicked = false;
    while (callback === undefined && Date.now() < deadline) {
      if (!clicked && (await page.$(button).catch(() => null)) !== null) {
        await page.click(button);
        clicked = true;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    page.off('request', onRequest);
    await page.setRequestInterception(false);
  }
  assert.ok(callback !== undefined, 'the provider redirected to the callback');
  return callback;
}

/** Drops heapcap's session cookie from the page's profile (a new day on the same phone). */
async function dropSession(page: Page): Promise<void> {
  const cdp = await page.createCDPSession();
  try {
    await cdp.send('Network.deleteCookies', { name: 'heapcap_session', url: `${serve.url}/` });
  } finally {
    await cdp.detach();
  }
}

/** The refusal page's code and text, after a navigation to `url` (or the current page). */
async function refusal(page: Page): Promise<{ code: string | null; why: string }> {
  const main = await page.waitForSelector('main[data-code]');
  return { code: await main!.evaluate((e) => e.getAttribute('data-code')), why: await page.$eval('#why', (e) => e.textContent ?? '') };
}

/** The audit entries (action, who, details) written so far. */
async function audit(): Promise<{ action: string; who: string; details: Record<string, unknown> }[]> {
  const raw = await redis.cli('--json', 'XRANGE', 'heapcap:hc:audit', '-', '+');
  const entries = JSON.parse(raw) as [string, string[]][];
  return entries.map(([, fields]) => {
    const f: Record<string, string> = {};
    for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
    return { action: f['action'] ?? '', who: f['who'] ?? '', details: JSON.parse(f['details'] ?? '{}') as Record<string, unknown> };
  });
}

async function sessionCookieOf(context: BrowserContext): Promise<string | undefined> {
  return (await context.cookies()).find((c) => c.name === 'heapcap_session')?.value;
}

/** Signs alice in from the captures list; her session id. */
async function signedInAsAlice(page: Page, context: BrowserContext): Promise<string> {
  await page.goto(`${serve.url}/ui/#/captures`);
  await signInAt(page, 'alice');
  await page.waitForSelector('[data-testid=who]');
  const id = await sessionCookieOf(context);
  assert.ok(id !== undefined, 'a session cookie');
  return id;
}

void describe('console OIDC sign-in against a real provider (ORY Hydra)', () => {
  before(async () => {
    redis = await startRedis();
    dir = await tmpDir('heapcap-oidc');
    target = await startNodeTarget({ script: join(REPO_ROOT, 'packages/analysis/test/fixtures/shapes-target.cjs') });
    const port = await freePort();
    const publicUrl = `http://127.0.0.1:${port}`;
    hydra = await startHydra({ users: USERS, redirectUri: `${publicUrl}/auth/oidc/callback`, postLogoutRedirectUri: `${publicUrl}/ui/` });
    await writeFile(join(dir.path, 'targets.yaml'), `targets:\n  - id: shapes\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n`);
    await writeFile(join(dir.path, 'tokens.yaml'), `tokens:\n  - name: admin\n    sha256: "${hashToken(ADMIN_TOKEN)}"\n    scopes: [captures:read, captures:write, artifacts:read, targets:admin]\n`);
    await writeFile(
      join(dir.path, 'oidc-grants.yaml'),
      'claim: groups\ngrants:\n' +
        '  - name: oncall\n    values: [heapcap-oncall]\n    scopes: [captures:read, captures:write, artifacts:read]\n' +
        '  - name: readers\n    values: [heapcap-readers]\n    scopes: [captures:read]\n',
    );
    serve = await startHeapcap(['serve'], {
      cwd: dir.path,
      timeoutMs: 180_000,
      env: {
        HEAPCAP_REDIS_URL: redis.url,
        HEAPCAP_PORT: String(port),
        HEAPCAP_PUBLIC_URL: publicUrl,
        HEAPCAP_TARGETS_FILE: join(dir.path, 'targets.yaml'),
        HEAPCAP_TOKENS_FILE: join(dir.path, 'tokens.yaml'),
        HEAPCAP_STORAGE: `file://${join(dir.path, 'captures')}`,
        HEAPCAP_OIDC_ISSUER: hydra.issuer,
        HEAPCAP_OIDC_CLIENT_ID: hydra.clientId,
        HEAPCAP_OIDC_CLIENT_SECRET: hydra.clientSecret,
        HEAPCAP_OIDC_GRANTS_FILE: join(dir.path, 'oidc-grants.yaml'),
        HEAPCAP_OIDC_SCOPES: 'openid email profile',
        HEAPCAP_OIDC_DISPLAY_NAME: 'Test SSO',
        HEAPCAP_CONSOLE_TOKEN_SIGNIN: 'off',
      },
    });
    // The page a Slack message links to: a real capture.
    const res = await fetch(`${serve.url}/v1/captures?wait=90`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ target: 'shapes', reason: 'oidc test' }),
    });
    const record = ((await res.json()) as { capture: { id: string; status: string } }).capture;
    assert.equal(record.status, 'succeeded', JSON.stringify(record));
    captureId = record.id;
    browser = await puppeteer.launch({
      executablePath: chromiumBinary(),
      headless: true,
      userDataDir: join(dir.path, 'chromium'),
      args: [...CHROMIUM_FLAGS.filter((f) => f !== '--headless')],
      defaultViewport: { width: 390, height: 844, isMobile: true, hasTouch: true },
    });
  });
  after(async () => {
    await browser?.close();
    await serve?.stop();
    await hydra?.stop();
    await target?.kill();
    await redis?.stop();
    await dir?.cleanup();
  });

  void it('token sign-in to the console is off, bearer tokens still serve the API', async () => {
    const view = (await (await fetch(`${serve.url}/v1/session`)).json()) as { signIn: { token: boolean; oidc: { name: string } | null } };
    assert.deepEqual(view.signIn, { token: false, oidc: { name: 'Test SSO', url: '/auth/oidc/login' } });
    const post = await fetch(`${serve.url}/v1/session`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(post.status, 403);
    assert.match(((await post.json()) as { error: { message: string } }).error.message, /HEAPCAP_CONSOLE_TOKEN_SIGNIN=off/);
    assert.equal((await fetch(`${serve.url}/v1/captures/${captureId}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status, 200);
  });

  void it('a link to a capture goes through the provider and returns to that capture, signed in with the mapped scopes', async () => {
    const { context, page } = await freshContext();
    try {
      await page.goto(`${serve.url}/ui/#/captures/${captureId}`);
      assert.equal(await page.$('#token'), null, 'no token form when token sign-in is off');
      const shown = hydra.counts.loginPages;
      await signInAt(page, 'alice');
      assert.equal(hydra.counts.loginPages, shown + 1);
      await page.waitForSelector('[data-testid=who]');
      assert.equal(await page.evaluate(() => location.hash), `#/captures/${captureId}`);
      await page.waitForSelector('h1 [data-status="succeeded"]');
      const who = await page.$eval('[data-testid=who]', (e) => e.textContent ?? '');
      assert.match(who, /alice@example\.com/);
      assert.match(who, /captures:write/);
      assert.doesNotMatch(who, /targets:admin/);
      const cookie = (await context.cookies()).find((c) => c.name === 'heapcap_session')!;
      assert.equal(cookie.httpOnly, true);
      assert.equal(cookie.sameSite, 'Strict');
      // The session is the console's usual one: a write needs its CSRF token.
      const forged = await fetch(`${serve.url}/v1/captures`, {
        method: 'POST',
        headers: { cookie: `heapcap_session=${cookie.value}`, 'content-type': 'application/json' },
        body: JSON.stringify({ target: 'shapes', reason: 'forged' }),
      });
      assert.equal(forged.status, 403);
      const created = (await audit()).filter((e) => e.action === 'session.create' && e.who === 'alice@example.com');
      assert.equal(created.length, 1);
      assert.equal(created[0]!.details['via'], 'oidc');
      assert.deepEqual(created[0]!.details['grants'], ['oncall']);
      assert.equal(created[0]!.details['returnTo'], `#/captures/${captureId}`);

      // Item 4: the next Slack link on this phone, after heapcap's session is gone (a new day), needs no second sign-in:
      // the provider remembers the person, one tap returns to the page.
      await dropSession(page);
      // From elsewhere (the Slack app), not a same-document hash change.
      await page.goto('about:blank');
      await page.goto(`${serve.url}/ui/#/captures/${captureId}`);
      await signInAt(page, undefined);
      await page.waitForSelector('h1 [data-status="succeeded"]');
      assert.equal(await page.evaluate(() => location.hash), `#/captures/${captureId}`);
      assert.equal(hydra.counts.loginPages, shown + 1, 'the provider did not ask again');
    } finally {
      await context.close();
    }
  });

  void it('a person whose groups map to no scope is refused with a page that says why', async () => {
    const { context, page } = await freshContext();
    try {
      await page.goto(`${serve.url}/ui/#/captures/${captureId}`);
      await signInAt(page, 'mallory');
      const r = await refusal(page);
      assert.equal(r.code, 'oidc_no_grant');
      assert.match(r.why, /mallory@example\.com/);
      assert.match(r.why, /contractors/);
      assert.match(r.why, /HEAPCAP_OIDC_GRANTS_FILE/);
      assert.equal(await sessionCookieOf(context), undefined, 'no session');
      const refused = (await audit()).filter((e) => e.action === 'session.refused' && e.who === 'mallory@example.com');
      assert.equal(refused.at(-1)?.details['code'], 'oidc_no_grant');
    } finally {
      await context.close();
    }
  });

  void it('a tampered state is refused before the code is spent', async () => {
    const { context, page } = await freshContext();
    try {
      const callback = new URL(await callbackUrlOf(page, 'alice'));
      callback.searchParams.set('state', `${callback.searchParams.get('state')}x`);
      await page.goto(callback.href);
      const r = await refusal(page);
      assert.equal(r.code, 'oidc_state_mismatch');
      assert.match(r.why, /state was altered, already used/);
      assert.equal(await sessionCookieOf(context), undefined);
    } finally {
      await context.close();
    }
  });

  void it('a callback forwarded to another browser is refused, and a used one cannot be replayed', async () => {
    const a = await freshContext();
    const b = await freshContext();
    try {
      // Forwarded before use: the other browser lacks the cookie that binds the sign-in, so it gets nothing,
      // and the sign-in is spent: the first browser cannot finish it either.
      const forwarded = await callbackUrlOf(a.page, 'alice');
      await b.page.goto(forwarded);
      assert.equal((await refusal(b.page)).code, 'oidc_state_mismatch');
      assert.equal(await sessionCookieOf(b.context), undefined);
      await a.page.goto(forwarded);
      assert.equal((await refusal(a.page)).code, 'oidc_state_mismatch');
      assert.equal(await sessionCookieOf(a.context), undefined);

      // Used once, then replayed in the same browser: refused.
      const used = await callbackUrlOf(a.page, 'alice');
      await a.page.goto(used);
      await a.page.waitForSelector('[data-testid=who]');
      await dropSession(a.page);
      await a.page.goto(used);
      assert.equal((await refusal(a.page)).code, 'oidc_state_mismatch');
      assert.equal(await sessionCookieOf(a.context), undefined);
    } finally {
      await a.context.close();
      await b.context.close();
    }
  });

  void it('a Slack link forwarded to other people gives each only their own access', async () => {
    const link = `${serve.url}/ui/#/captures/${captureId}`;
    const bob = await freshContext();
    const mallory = await freshContext();
    try {
      await bob.page.goto(link);
      await signInAt(bob.page, 'bob');
      await bob.page.waitForSelector('h1 [data-status="succeeded"]');
      const who = await bob.page.$eval('[data-testid=who]', (e) => e.textContent ?? '');
      assert.match(who, /bob@example\.com/);
      assert.match(who, /\(captures:read\)/);
      const cookie = (await sessionCookieOf(bob.context))!;
      const download = await fetch(`${serve.url}/v1/captures/${captureId}/artifact`, { headers: { cookie: `heapcap_session=${cookie}` } });
      assert.equal(download.status, 403, 'bob may not download the snapshot');
      await mallory.page.goto(link);
      await signInAt(mallory.page, 'mallory');
      assert.equal((await refusal(mallory.page)).code, 'oidc_no_grant');
    } finally {
      await bob.context.close();
      await mallory.context.close();
    }
  });

  void it('an expired session sends the console back to sign-in', async () => {
    const { context, page } = await freshContext();
    try {
      const id = await signedInAsAlice(page, context);
      const key = `heapcap:hc:console:session:${createHash('sha256').update(id).digest('hex')}`;
      // Redis ends the session as its TTL would, a working day later.
      assert.equal(await redis.cli('PEXPIRE', key, '1'), '1');
      const deadline = Date.now() + 15_000;
      while ((await redis.cli('EXISTS', key)) !== '0' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.equal((await fetch(`${serve.url}/v1/captures`, { headers: { cookie: `heapcap_session=${id}` } })).status, 401);
      await page.reload();
      await page.waitForSelector('[data-testid=sign-in-oidc]');
      assert.equal(await page.$('[data-testid=who]'), null);
    } finally {
      await context.close();
    }
  });

  void it('sign-out ends the session here and at the provider', async () => {
    const { context, page } = await freshContext();
    try {
      const id = await signedInAsAlice(page, context);
      const logouts = hydra.counts.logouts;
      // A DOM click: at phone width the header may fold the button into a menu.
      await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.$eval('[data-testid=sign-out]', (e) => (e as unknown as { click(): void }).click())]);
      await page.waitForSelector('[data-testid=sign-in-oidc]');
      assert.ok(page.url().startsWith(`${serve.url}/ui/`), page.url());
      assert.equal(hydra.counts.logouts, logouts + 1, 'the provider logged the person out');
      const view = (await (await fetch(`${serve.url}/v1/session`, { headers: { cookie: `heapcap_session=${id}` } })).json()) as { signedIn: boolean };
      assert.equal(view.signedIn, false, 'the old cookie signs nobody in');
      // The provider forgot the person too: signing in again shows its login page.
      const shown = hydra.counts.loginPages;
      await signInAt(page, 'alice');
      await page.waitForSelector('[data-testid=who]');
      assert.equal(hydra.counts.loginPages, shown + 1);
      assert.ok((await audit()).some((e) => e.action === 'session.delete' && e.who === 'alice@example.com' && e.details['via'] === 'oidc'));
    } finally {
      await context.close();
    }
  });
});
