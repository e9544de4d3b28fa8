/**
 * Slack's request signing, version v0: `X-Slack-Signature` is
 * `v0=` + hex HMAC-SHA256 over `v0:{X-Slack-Request-Timestamp}:{raw body}`
 * keyed with the app's signing secret. Checked on the raw bytes (a body
 * re-encoded after form parsing would not match), compared in constant time,
 * and a timestamp more than five minutes from now is a replay.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Slack's replay window: requests signed more than this far from now are refused. */
export const SIGNATURE_TOLERANCE_S = 5 * 60;

/** Why a request was refused; stable words for the 401 body, the audit log and the logs. */
export type SignatureFailure = 'missing_headers' | 'malformed_signature' | 'stale_timestamp' | 'bad_signature';

/** Outcome of a verification. */
export type SignatureCheck = { ok: true } | { ok: false; reason: SignatureFailure };

/** What verification needs from a request. */
export interface SignedRequest {
  /** `X-Slack-Request-Timestamp` (seconds since the epoch), as received. */
  timestamp: string | undefined;
  /** `X-Slack-Signature`, as received. */
  signature: string | undefined;
  /** The body exactly as it arrived. */
  rawBody: Buffer;
}

const SIGNATURE = /^v0=([0-9a-f]{64})$/;
const TIMESTAMP = /^\d{1,12}$/;

function hmac(secret: string, timestamp: string, rawBody: Buffer): Buffer {
  return createHmac('sha256', secret).update(`v0:${timestamp}:`, 'utf8').update(rawBody).digest();
}

/** Verifies a request against `signingSecret` at `nowMs` (default: now). */
export function verifySlackSignature(signingSecret: string, req: SignedRequest, nowMs: number = Date.now()): SignatureCheck {
  const { timestamp, signature } = req;
  if (timestamp === undefined || timestamp === '' || signature === undefined || signature === '') return { ok: false, reason: 'missing_headers' };
  const hex = SIGNATURE.exec(signature)?.[1];
  if (hex === undefined || !TIMESTAMP.test(timestamp)) return { ok: false, reason: 'malformed_signature' };
  // Either side: a timestamp from the future is as suspect as an old one.
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > SIGNATURE_TOLERANCE_S) return { ok: false, reason: 'stale_timestamp' };
  const expected = hmac(signingSecret, timestamp, req.rawBody);
  const presented = Buffer.from(hex, 'hex');
  // Same length by construction (the regex), so timingSafeEqual never throws.
  return timingSafeEqual(expected, presented) ? { ok: true } : { ok: false, reason: 'bad_signature' };
}

/** The headers Slack would send with `rawBody` signed at `timestampS` (for tests and tools). */
export function signSlackRequest(signingSecret: string, rawBody: string | Buffer, timestampS: number = Math.floor(Date.now() / 1000)): { 'x-slack-request-timestamp': string; 'x-slack-signature': string } {
  const ts = String(timestampS);
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody;
  return { 'x-slack-request-timestamp': ts, 'x-slack-signature': `v0=${hmac(signingSecret, ts, body).toString('hex')}` };
}
