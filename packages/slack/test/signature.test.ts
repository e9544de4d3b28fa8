/** Slack's v0 request signature: Slack's own documented example, and every way a request can fail it. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { signSlackRequest, verifySlackSignature } from '../src/index.ts';

// The worked example of Slack's "Verifying requests from Slack" page: secret, timestamp, body and signature as published.
const DOC = {
  secret: '8f742231b10e8888abcd99yyyzzz85a5',
  timestamp: '1531420618',
  body:
    'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner' +
    '&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN' +
    '&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
  signature: 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
};
const docNow = Number(DOC.timestamp) * 1000;

void test("Slack's documented example verifies, and our signer produces its signature", () => {
  assert.deepEqual(verifySlackSignature(DOC.secret, { timestamp: DOC.timestamp, signature: DOC.signature, rawBody: Buffer.from(DOC.body) }, docNow), { ok: true });
  assert.equal(signSlackRequest(DOC.secret, DOC.body, Number(DOC.timestamp))['x-slack-signature'], DOC.signature);
});

void test('every failure has its reason', () => {
  const ok = { timestamp: DOC.timestamp, signature: DOC.signature, rawBody: Buffer.from(DOC.body) };
  const check = (req: Partial<typeof ok>, now = docNow): unknown => verifySlackSignature(DOC.secret, { ...ok, ...req }, now);
  assert.deepEqual(check({ signature: undefined }), { ok: false, reason: 'missing_headers' });
  assert.deepEqual(check({ timestamp: '' }), { ok: false, reason: 'missing_headers' });
  assert.deepEqual(check({ signature: 'v1=abc' }), { ok: false, reason: 'malformed_signature' });
  assert.deepEqual(check({ signature: DOC.signature.toUpperCase() }), { ok: false, reason: 'malformed_signature' });
  assert.deepEqual(check({ timestamp: '1531420618.5' }), { ok: false, reason: 'malformed_signature' });
  // Five minutes either way is the window; one second more is a replay.
  assert.deepEqual(check({}, docNow + 300_000), { ok: true });
  assert.deepEqual(check({}, docNow + 301_000), { ok: false, reason: 'stale_timestamp' });
  assert.deepEqual(check({}, docNow - 301_000), { ok: false, reason: 'stale_timestamp' });
  assert.deepEqual(check({ rawBody: Buffer.from(DOC.body.replace('text=', 'text=x')) }), { ok: false, reason: 'bad_signature' });
  assert.deepEqual(check({ rawBody: Buffer.from(`${DOC.body} `) }), { ok: false, reason: 'bad_signature' });
  assert.deepEqual(verifySlackSignature('another-secret-0123456789', ok, docNow), { ok: false, reason: 'bad_signature' });
  // The signature binds the timestamp: a fresh timestamp on an old signature fails.
  assert.deepEqual(check({ timestamp: String(Number(DOC.timestamp) + 1) }), { ok: false, reason: 'bad_signature' });
});

void test('the raw bytes are signed: a body re-encoded after parsing does not verify', () => {
  const secret = 'a-signing-secret-of-32-characters';
  const raw = 'text=capture%20demo%20%22test%20%F0%9F%9A%80%22&team_id=T1';
  const headers = signSlackRequest(secret, raw, 1_700_000_000);
  const reencoded = new URLSearchParams(Object.fromEntries(new URLSearchParams(raw))).toString();
  assert.notEqual(reencoded, raw);
  const req = (body: string) => ({ timestamp: headers['x-slack-request-timestamp'], signature: headers['x-slack-signature'], rawBody: Buffer.from(body) });
  assert.deepEqual(verifySlackSignature(secret, req(raw), 1_700_000_000_000), { ok: true });
  assert.deepEqual(verifySlackSignature(secret, req(reencoded), 1_700_000_000_000), { ok: false, reason: 'bad_signature' });
});
