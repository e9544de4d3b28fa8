/** The OIDC grants file: parsing (through loadConfigFile's rules), claim paths, and the scopes a person's values give. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigFileError } from '@heapcap/config';
import { claimValues, grantsFor, nameOf, parseOidcGrants } from '../src/auth/oidc-grants.ts';

const FILE = `claim: realm_access.roles
grants:
  - name: oncall
    values: [heapcap-oncall]
    scopes: [captures:read, captures:write, artifacts:read]
  - name: readers
    values: [heapcap-readers, heapcap-oncall]
    scopes: [captures:read]
`;

void test('a person holds the union of the grants their values match; none match, no scope', () => {
  const g = parseOidcGrants(FILE);
  const claims = { sub: 'u1', email: 'a@example.com', realm_access: { roles: ['staff', 'heapcap-oncall'] } };
  const values = claimValues(claims, g.claim);
  assert.deepEqual(values, ['staff', 'heapcap-oncall']);
  const got = grantsFor(g, values);
  assert.deepEqual(got.grants, ['oncall', 'readers']);
  assert.deepEqual([...got.scopes].sort(), ['artifacts:read', 'captures:read', 'captures:write']);
  assert.equal(grantsFor(g, ['contractors']).scopes.size, 0);
  assert.equal(nameOf(g, claims), 'a@example.com');
  assert.equal(nameOf(g, { sub: 'u2' }), 'u2', 'no email claim: the subject');
});

void test('a string claim is one value; "*" matches anyone; a claim of another type gives none', () => {
  const g = parseOidcGrants('claim: hd\ngrants:\n  - name: staff\n    values: [acme.com]\n    scopes: [captures:read]\n  - name: all\n    values: ["*"]\n    scopes: [captures:read]\n');
  assert.deepEqual(claimValues({ hd: 'acme.com' }, g.claim), ['acme.com']);
  assert.deepEqual(claimValues({ hd: 42 }, g.claim), []);
  assert.deepEqual(grantsFor(g, []).grants, ['all']);
});

void test('a bad file names the field and how to fix it', () => {
  assert.throws(() => parseOidcGrants('grants:\n  - name: x\n    values: []\n    scopes: [captures:read]\n'), (err: unknown) => err instanceof ConfigFileError && /claim values/.test(err.message));
  assert.throws(() => parseOidcGrants('grants:\n  - name: x\n    values: [a]\n    scopes: [root]\n'), ConfigFileError);
  assert.throws(() => parseOidcGrants('grants:\n  - {name: x, values: [a], scopes: [captures:read]}\n  - {name: x, values: [b], scopes: [captures:read]}\n'), /x/);
});
