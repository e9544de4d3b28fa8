/** The HEAPCAP_OIDC_* variables and HEAPCAP_CONSOLE_TOKEN_SIGNIN: defaults, what must come together, and errors that name the variable. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, parseConfig } from '../src/index.ts';

function problems(env: Record<string, string>): string[] {
  try {
    parseConfig(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.issues.map((i) => `${i.variable}: ${i.message}`);
  }
  return [];
}

void test('defaults: no OIDC, token sign-in on', () => {
  assert.deepEqual(parseConfig({}).consoleAuth, { oidc: undefined, tokenSignIn: true });
});

void test('every OIDC variable lands in config.consoleAuth', () => {
  const c = parseConfig({
    HEAPCAP_OIDC_ISSUER: 'https://acme.okta.com',
    HEAPCAP_OIDC_CLIENT_ID: '0oa1b2c3',
    HEAPCAP_OIDC_CLIENT_SECRET: 's3cret-s3cret',
    HEAPCAP_OIDC_GRANTS_FILE: '/etc/heapcap/oidc-grants.yaml',
    HEAPCAP_OIDC_SCOPES: 'openid  email groups',
    HEAPCAP_OIDC_DISPLAY_NAME: 'Okta',
    HEAPCAP_CONSOLE_TOKEN_SIGNIN: 'off',
  });
  assert.deepEqual(c.consoleAuth, {
    oidc: { issuer: 'https://acme.okta.com', clientId: '0oa1b2c3', clientSecret: 's3cret-s3cret', grantsFile: '/etc/heapcap/oidc-grants.yaml', scopes: ['openid', 'email', 'groups'], displayName: 'Okta' },
    tokenSignIn: false,
  });
});

void test('the issuer needs a client id and a grants file; the others need the issuer; off needs OIDC', () => {
  assert.deepEqual(problems({ HEAPCAP_OIDC_ISSUER: 'https://dex.example.com' }), [
    'HEAPCAP_OIDC_CLIENT_ID: required with HEAPCAP_OIDC_ISSUER: the client id registered at the provider',
    'HEAPCAP_OIDC_GRANTS_FILE: required with HEAPCAP_OIDC_ISSUER: the file that maps claim values (groups) to scopes (docs/operations.md)',
  ]);
  assert.match(problems({ HEAPCAP_OIDC_CLIENT_ID: 'heapcap' }).join('\n'), /^HEAPCAP_OIDC_CLIENT_ID: set without HEAPCAP_OIDC_ISSUER/);
  assert.match(problems({ HEAPCAP_CONSOLE_TOKEN_SIGNIN: 'off' }).join('\n'), /^HEAPCAP_CONSOLE_TOKEN_SIGNIN: off needs another way to sign in/);
});

void test('an issuer over plain http is only taken on this machine; the scopes must ask for openid', () => {
  assert.match(problems({ HEAPCAP_OIDC_ISSUER: 'http://dex.example.com', HEAPCAP_OIDC_CLIENT_ID: 'x', HEAPCAP_OIDC_GRANTS_FILE: 'g.yaml' }).join('\n'), /HEAPCAP_OIDC_ISSUER: must be https:\/\//);
  assert.deepEqual(problems({ HEAPCAP_OIDC_ISSUER: 'http://localhost:4444', HEAPCAP_OIDC_CLIENT_ID: 'x', HEAPCAP_OIDC_GRANTS_FILE: 'g.yaml' }), []);
  assert.match(problems({ HEAPCAP_OIDC_SCOPES: 'email groups' }).join('\n'), /HEAPCAP_OIDC_SCOPES: must include openid/);
});

void test('the client secret never appears in an error', () => {
  const secret = 'very-secret-client-secret-0000';
  const text = problems({ HEAPCAP_OIDC_CLIENT_SECRET: secret }).join('\n');
  assert.match(text, /HEAPCAP_OIDC_CLIENT_SECRET: set without HEAPCAP_OIDC_ISSUER/);
  assert.doesNotMatch(text, new RegExp(secret));
});
