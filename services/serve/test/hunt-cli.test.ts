/**
 * `heapcap hunt TARGET --interval 2s` against `bin/heapcap serve --dev` (real
 * Redis, a real leaking Node target): it posts the hunt, waits for it, and
 * prints the suspects first (the leaked class with its holder, ranked as in
 * a diff), then the classes; `--json` prints the API's body; a failed hunt
 * exits with its error's code and an unknown target with 3 (README).
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { huntMain } from '@heapcap/cli';
import { FREE_PORT, runHeapcap, startHeapcap, startNodeTarget, startRedis, tmpDir, waitFor, type NodeTarget, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';

const LEAK_TARGET = fileURLToPath(new URL('../../../packages/analysis/test/fixtures/leak-target.cjs', import.meta.url));

let redis: RedisServer;
let dir: TmpDir;
let target: NodeTarget;
let doomed: NodeTarget;
let web: NodeTarget;
let webPort = 0;
let serve: RunningHeapcap;

before(async () => {
  redis = await startRedis();
  dir = await tmpDir('heapcap-serve-hunt');
  [target, doomed, web] = await Promise.all([
    startNodeTarget({ script: LEAK_TARGET }),
    startNodeTarget({ script: LEAK_TARGET }),
    startNodeTarget({ script: fileURLToPath(new URL('./fixtures/http-leak.cjs', import.meta.url)) }),
  ]);
  webPort = Number(/^PORT (\d+)$/m.exec(web.stdoutText())?.[1]);
  const targetsFile = join(dir.path, 'heapcap.targets.yaml');
  await writeFile(targetsFile, `targets:\n  - id: leaky\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n  - id: doomed\n    kind: node\n    inspect: 127.0.0.1:${doomed.port}\n  - id: web\n    kind: node\n    inspect: 127.0.0.1:${web.port}\n`);
  serve = await startHeapcap(['serve', '--dev'], {
    env: { HEAPCAP_REDIS_URL: redis.url, HEAPCAP_PORT: FREE_PORT, HEAPCAP_TARGETS_FILE: targetsFile, HEAPCAP_STORAGE: `file://${join(dir.path, 'captures')}` },
  });
});
after(async () => {
  await serve?.stop();
  await Promise.all([target?.kill(), doomed?.kill(), web?.kill()]);
  await redis?.stop();
  await dir?.cleanup();
});

function collect(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (d: Buffer) => (text += d.toString()));
  return { stream, text: () => text };
}

/** Waits until the CLI's progress lines (stderr) say the hunt reached `phase`. */
async function reached(err: { text: () => string }, phase: string): Promise<void> {
  await waitFor(() => err.text().split('\n').includes(`  ${phase}`), { timeoutMs: 60_000, intervalMs: 50, what: `the hunt to reach ${phase}` });
}

void test('heapcap hunt prints the suspects first: the leaked class, its count and its holder; then the classes', { timeout: 180_000 }, async () => {
  const env = { HEAPCAP_API_URL: serve.url };
  const out = collect();
  const err = collect();
  const hunting = huntMain(['leaky', '--interval', '2s', '--reason', 'heap grows'], env, { stdout: out.stream, stderr: err.stream });
  // Between baseline and target: 3,000 Leaked kept and 2,000 Transient; before final the Transients are freed.
  await reached(err, 'wait');
  await target.request('leak 3000', 'LEAKED');
  await target.request('transient 2000', 'TRANSIENT');
  await reached(err, 'wait-final');
  await target.request('free', 'FREED');
  assert.equal(await hunting, 0, err.text());
  const text = out.text();
  // Progress on stderr: the phases the CLI saw while polling (each second), ending with the report.
  assert.match(err.text(), /^leak hunt [0-9A-Z]{26} of leaky: three snapshots 2 s apart\n {2}allocation tracking is on from the baseline to the target snapshot: it slows a busy target meanwhile \(--no-allocations turns it off\)\n( {2}[a-z-]+\n)* {2}wait\n( {2}[a-z-]+\n)* {2}wait-final\n/);
  assert.match(text, /^leak hunt [0-9A-Z]{26} of leaky: [\d,]+ of [\d,]+ objects created between baseline and target still alive in final/);
  assert.match(text, /\nsuspects, largest surviving new memory first:\n {2}1\. \+3,000 elements in `__leaks` \(Array\): 3,000 Leaked \(\+[\d.]+ KiB\)[^\n]*\n(?: {6}[^\n]*\n)* {6}path: __leaks \(Array\) → Leaked\n/);
  // The hunt tracked allocations (the default): under the path, the function that made the Leaked objects.
  assert.match(text, / {6}path: __leaks \(Array\) → Leaked\n {6}allocated at fixtures\/leak-target\.cjs:\d+ (handle|Leaked)\b[^\n]*\n/, text);
  // No drive: the report says what it cannot tell.
  assert.match(text, /\n {2}note: no drive: the hunt cannot tell a buffer the target replaces from a leak/);
  assert.ok(text.indexOf('suspects,') < text.indexOf('classes, largest surviving'), 'suspects before classes');
  assert.match(text, /\n {2}Leaked: 3,000 \(/);
  // Made and freed between the snapshots: never a suspect nor a class (the name may still appear as a scope variable).
  assert.doesNotMatch(text, /Transient instances|^ {2}Transient: /m);
});

void test('heapcap hunt --json prints the record and report; a hunt that fails exits with its code; an unknown target is 3', { timeout: 180_000 }, async () => {
  const env = { HEAPCAP_API_URL: serve.url };
  const out = collect();
  const err = collect();
  // --no-allocations: the hunt is asked without allocation tracking (kept on its record) and says nothing of its cost.
  const hunting = huntMain(['doomed', '--interval', '5s', '--json', '--no-allocations'], env, { stdout: out.stream, stderr: err.stream });
  await reached(err, 'wait');
  await doomed.kill();
  // target_closed or target_unreachable, whichever the next snapshot meets: both are exit code 3.
  assert.equal(await hunting, 3, err.text());
  const body = JSON.parse(out.text()) as { hunt: { status: string; allocations: boolean; error: { code: string } }; report: null };
  assert.equal(body.hunt.status, 'failed');
  assert.equal(body.hunt.allocations, false);
  assert.doesNotMatch(err.text(), /allocation tracking is on/);
  assert.match(body.hunt.error.code, /^target_(closed|unreachable)$/);
  assert.equal(body.report, null);
  assert.match(err.text(), /\ntarget_(closed|unreachable): /);

  // Through the shipped command: wired into the bundle, with the README's exit codes.
  const unknown = await runHeapcap(['hunt', 'nope', '--interval', '1s'], { env: { HEAPCAP_API_URL: serve.url } });
  assert.equal(unknown.code, 3, unknown.stderr);
  assert.match(unknown.stderr, /^target_not_found: /m);
  const bad = await runHeapcap(['hunt', 'leaky', '--interval', '2h'], { env: { HEAPCAP_API_URL: serve.url } });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^invalid_input: --interval "2h" must be whole seconds from 1s to 1h/m);
});

void test('a hunt drives the target itself: HTTP requests to its own host, or a Runtime expression; other hosts and a throwing expression are refused', { timeout: 240_000 }, async () => {
  const env = { HEAPCAP_API_URL: serve.url };
  const run = async (args: string[]): Promise<{ code: number; out: string; err: string }> => {
    const out = collect();
    const err = collect();
    const code = await huntMain(args, env, { stdout: out.stream, stderr: err.stream });
    return { code, out: out.text(), err: err.text() };
  };
  // Nobody touches the service during this hunt but the hunt's own drive: 500 logins, each leaking a Session.
  // Three rounds (the default) before the target snapshot, one more before the final: 500 logins a round.
  const http = await run(['web', '--interval', '1s', '--http', `http://127.0.0.1:${webPort}/login`, '--method', 'POST', '--count', '500']);
  assert.equal(http.code, 0, http.err);
  assert.match(http.out, /\n {2}1\. \+1,500 entries in `sessions` \(Map\), a module variable of fixtures\/http-leak\.cjs: 1,500 Session \(\+[\d.]+ KiB\)[^\n]* \(\+500 per round, 3 rounds\)\n/, http.out);

  const evaluated = await run(['web', '--interval', '1s', '--rounds', '2', '--evaluate', '(() => { globalThis.Driven ??= class Driven {}; (globalThis.__driven ??= []).push(...Array.from({ length: 700 }, () => new globalThis.Driven())); })()']);
  assert.equal(evaluated.code, 0, evaluated.err);
  assert.match(evaluated.out, /\n {2}1\. \+1,400 elements in `__driven` \(Array\): 1,400 Driven \(\+[\d.]+ KiB\)[^\n]* \(\+700 per round, 2 rounds\)\n/, evaluated.out);

  // Each round replaces a 2,000-object buffer and leaks 1,000 small objects: the leak first, the buffer never listed.
  const replaced = await run([
    'web',
    '--interval',
    '1s',
    '--evaluate',
    '(() => { globalThis.BatchItem ??= class BatchItem {}; globalThis.Small ??= class Small {}; globalThis.lastBatch = Array.from({ length: 2000 }, (_, i) => new globalThis.BatchItem(i)); (globalThis.kept ??= []).push(...Array.from({ length: 1000 }, () => new globalThis.Small())); })()',
  ]);
  assert.equal(replaced.code, 0, replaced.err);
  const suspectsBlock = replaced.out.slice(replaced.out.indexOf('suspects,'), replaced.out.indexOf('classes, largest surviving'));
  assert.match(suspectsBlock, /\n {2}1\. \+3,000 elements in `kept` \(Array\): 3,000 Small \(\+[\d.]+ KiB\)[^\n]* \(\+1,000 per round, 3 rounds\)\n/, replaced.out);
  assert.doesNotMatch(suspectsBlock, /BatchItem|lastBatch/, replaced.out);

  // Not the target's host (a cloud metadata address): refused before any hunt exists.
  const ssrf = await run(['web', '--interval', '1s', '--http', 'http://169.254.169.254/latest/meta-data/']);
  assert.equal(ssrf.code, 2, ssrf.err);
  assert.match(ssrf.err, /^drive_url_not_allowed: drive\.http\.url must address target web's own host \(127\.0\.0\.1\), not 169\.254\.169\.254/m);

  const threw = await run(['web', '--interval', '1s', '--evaluate', 'throw new Error("boom")']);
  assert.equal(threw.code, 2, threw.err);
  assert.match(threw.err, /^invalid_input: the hunt's drive expression threw: Error: boom$/m);
});
