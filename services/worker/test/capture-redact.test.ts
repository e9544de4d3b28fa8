/**
 * Redaction of a worker's captures (issue 27): the request, the target and
 * the service default (HEAPCAP_REDACT) decide, a request can raise it but not
 * lower it, and a request for redaction never joins a capture without it.
 * The stored artifact (gunzipped) of the secrets target holds none of its
 * secrets when redacted, all of them otherwise; the manifest and the stored
 * sha256 are of the redacted bytes. Real Redis, a real Node target.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, afterEach, before, test } from 'node:test';
import type { RedactMode } from '@heapcap/config';
import type { CaptureOptions, CaptureRecord } from '@heapcap/state';
import { startRedis, startSecretsTarget, tokensIn, type NodeTarget, type RedisServer } from '@heapcap/testkit';
import { createHarness, type Harness } from './helpers/harness.ts';

let redis: RedisServer;
let h: Harness | undefined;
let target: NodeTarget;
let tokens: string[];

before(async () => {
  redis = await startRedis();
  ({ target, tokens } = await startSecretsTarget());
});
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});
after(async () => {
  await target?.kill();
  await redis?.stop();
});

/** Registers the secrets target as `id` (with `redact` when given). */
async function register(hh: Harness, id: string, redact: RedactMode | undefined): Promise<void> {
  await hh.queue.targets.put({ id, kind: 'node', inspect: `127.0.0.1:${target.port}`, labels: {}, redact });
}

/** Captures `id` with `options`; the stored artifact's bytes (gunzipped), its manifest's redaction, and whether the manifest's sha256 (of the uncompressed JSON) is of those bytes. */
async function capture(hh: Harness, id: string, options: Partial<CaptureOptions>): Promise<{ bytes: Buffer; redaction: { mode: string }; shaOk: boolean; record: CaptureRecord }> {
  const { record } = await hh.queue.requestCapture({ targetId: id, trigger: { kind: 'rest', who: 'oncall' }, options, force: true });
  const final = await hh.queue.waitForCapture(record.id, 120_000);
  assert.equal(final?.status, 'succeeded', JSON.stringify(final?.error));
  const artifact = final?.artifact;
  assert.ok(artifact);
  const stored = await readFile(join(hh.storeDir.path, artifact.key));
  const manifest = JSON.parse(await readFile(join(hh.storeDir.path, artifact.manifestKey), 'utf8')) as { redaction: { mode: string }; artifact: { sha256: string } };
  const bytes = gunzipSync(stored);
  return { bytes, redaction: manifest.redaction, shaOk: manifest.artifact.sha256 === createHash('sha256').update(bytes).digest('hex'), record: final as CaptureRecord };
}

void test('request, target and service default: strings redacts, and a request cannot lower the target', { timeout: 300_000 }, async () => {
  h = await createHarness(redis.url);
  await register(h, 'plain', undefined);
  await register(h, 'guarded', 'strings');
  await h.startWorker({}, { redact: 'none' });
  const clear = await capture(h, 'plain', {});
  assert.equal(clear.redaction.mode, 'none');
  assert.deepEqual(tokensIn(clear.bytes, tokens), tokens, 'without redaction every secret is stored');
  const asked = await capture(h, 'plain', { redact: 'strings' });
  assert.equal(asked.redaction.mode, 'strings');
  assert.ok(asked.shaOk, 'the manifest sha256 is of the redacted bytes');
  assert.deepEqual(tokensIn(asked.bytes, tokens), [], 'the request asked for strings');
  const lowered = await capture(h, 'guarded', { redact: 'none' });
  assert.equal(lowered.redaction.mode, 'strings');
  // The record says the mode the snapshot was stored with, and the manifest's counts (issue 41); the request stays as asked.
  assert.equal(lowered.record.options.redact, 'none');
  assert.deepEqual(lowered.record.redaction, lowered.redaction);
  assert.equal(clear.record.redaction?.mode, 'none');
  assert.deepEqual(tokensIn(lowered.bytes, tokens), [], "a request's none does not lower the target's strings");
});

void test('HEAPCAP_REDACT=strings redacts a target that says nothing; a target that says none is captured in the clear', { timeout: 300_000 }, async () => {
  h = await createHarness(redis.url);
  await register(h, 'quiet', undefined);
  await register(h, 'open', 'none');
  await h.startWorker({}, { redact: 'strings' });
  assert.deepEqual(tokensIn((await capture(h, 'quiet', {})).bytes, tokens), []);
  assert.deepEqual(tokensIn((await capture(h, 'open', {})).bytes, tokens), tokens);
});

void test('a request for redaction never joins a queued capture without it, and joins one with it', async () => {
  h = await createHarness(redis.url);
  await register(h, 'shared', undefined);
  const trigger = { kind: 'rest' as const, who: 'oncall' };
  const plain = await h.queue.requestCapture({ targetId: 'shared', trigger });
  const redacted = await h.queue.requestCapture({ targetId: 'shared', trigger, options: { redact: 'strings' } });
  assert.equal(redacted.coalesced, false, 'not joined to the capture without redaction');
  assert.notEqual(redacted.record.id, plain.record.id);
  const again = await h.queue.requestCapture({ targetId: 'shared', trigger, options: { redact: 'strings' } });
  assert.equal(again.coalesced, true);
  assert.equal(again.record.id, redacted.record.id);
  const plainAgain = await h.queue.requestCapture({ targetId: 'shared', trigger });
  assert.equal(plainAgain.record.id, plain.record.id);
});
