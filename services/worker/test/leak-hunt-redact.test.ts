/**
 * A leak hunt's scratch files follow the redaction rule (issue 27): with
 * `redact: strings` on the target, or HEAPCAP_REDACT=strings for the worker,
 * or `redact: strings` in the hunt's request, the hunt's baseline snapshot
 * file holds none of the secrets target's secrets; with none of them, it holds
 * all of them; the hunt's record says the mode it ran with and how many
 * strings it replaced. Real Redis, a real Node target.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { RedactMode } from '@heapcap/config';
import { startRedis, startSecretsTarget, tmpDir, tokensIn, waitFor, type NodeTarget, type RedisServer } from '@heapcap/testkit';
import { createHarness, type Harness } from './helpers/harness.ts';
import { runLeakHunt } from '../src/leak-hunt.ts';

let redis: RedisServer;
let h: Harness;
let target: NodeTarget;
let tokens: string[];

before(async () => {
  redis = await startRedis();
  h = await createHarness(redis.url);
  ({ target, tokens } = await startSecretsTarget());
});
after(async () => {
  await target?.kill();
  await h?.cleanup();
  await redis?.stop();
});

/** Runs a hunt until its baseline is written, returns the baseline's bytes, then cancels the hunt. */
async function baselineOf(targetRedact: RedactMode | undefined, serviceRedact: RedactMode | undefined, requestRedact?: RedactMode): Promise<Buffer> {
  const id = `secrets-${targetRedact ?? 'unset'}-${serviceRedact ?? 'unset'}-${requestRedact ?? 'unset'}`;
  await h.queue.targets.put({ id, kind: 'node', inspect: `127.0.0.1:${target.port}`, labels: {}, redact: targetRedact });
  const scratch = await tmpDir('heapcap-hunt-redact');
  h.onCleanup(() => scratch.cleanup());
  const created = await h.queue.leakHunts.create({ targetId: id, intervalMs: 60_000, requestedBy: 'oncall', redact: requestRedact });
  assert.equal(created.redact, requestRedact);
  const controller = new AbortController();
  const hunting = runLeakHunt({ queue: h.queue, sink: h.store, log: h.log, maxBytes: 1e9, tempDir: scratch.path, concurrency: 1, redact: serviceRedact }, created.id, controller.signal);
  await waitFor(async () => ((await h.queue.leakHunts.get(created.id))?.phase === 'wait' ? true : undefined), { timeoutMs: 60_000, intervalMs: 20, what: 'the hunt to wait after its baseline' });
  const dir = (await readdir(scratch.path)).find((n) => n.startsWith(`heapcap-hunt-${created.id}-`));
  assert.ok(dir !== undefined);
  const bytes = await readFile(join(scratch.path, dir, 'baseline.heapsnapshot'));
  // The record says what the snapshot went through: the mode, and for strings how many values were replaced.
  const { redaction } = (await h.queue.leakHunts.get(created.id))!;
  const mode = requestRedact === 'strings' ? 'strings' : (targetRedact ?? serviceRedact ?? 'none');
  assert.equal(redaction?.mode, mode);
  if (mode === 'strings') assert.ok(redaction.redactedStrings! >= tokens.length, JSON.stringify(redaction));
  else assert.equal(redaction?.redactedStrings, undefined);
  controller.abort();
  await hunting;
  return bytes;
}

void test('a hunt redacts its scratch snapshots when the target or the worker says strings, and only then', { timeout: 180_000 }, async () => {
  assert.deepEqual(tokensIn(await baselineOf(undefined, undefined), tokens), tokens, 'without redaction the scratch file holds every secret');
  assert.deepEqual(tokensIn(await baselineOf('strings', undefined), tokens), [], 'the target says strings');
  assert.deepEqual(tokensIn(await baselineOf(undefined, 'strings'), tokens), [], 'HEAPCAP_REDACT=strings');
  assert.deepEqual(tokensIn(await baselineOf('none', 'strings'), tokens), tokens, "the target's none wins over the service default");
  assert.deepEqual(tokensIn(await baselineOf('none', undefined, 'strings'), tokens), [], "the request's strings wins over the target's none");
});
