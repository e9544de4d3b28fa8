/** The client commands' flags through util.parseArgs: the same flags, values and messages as before, exit 2 on a mistake. */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { FlagError, parseCreateArgs, parseFlags, parseTriggerArgs, schedulesMain, statusMain, STATUS_USAGE } from '../src/index.ts';

/** A stream that keeps what is written. */
function sink(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({ write: (chunk: Buffer, _enc, done) => ((text += chunk.toString()), done()) });
  return { stream, text: () => text };
}

void test('parseFlags: both spellings of a value, repeats kept in order, the offending argument on a mistake', () => {
  const spec = { reason: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } as const;
  assert.deepEqual(parseFlags(['x', '--reason', 'a', '--reason=b', '--json', '-h'], spec, 1), { values: { reason: ['a', 'b'], json: true, help: true }, positionals: ['x'] });
  // After `--`, an argument that looks like a flag is a positional.
  assert.deepEqual(parseFlags(['--', '--json'], spec, 1).positionals, ['--json']);
  for (const [argv, arg, message] of [
    [['--nope'], '--nope', 'unknown option --nope'],
    [['-x'], '-x', 'unknown option -x'],
    [['--reason'], '--reason', '--reason needs a value'],
    [['--json=yes'], '--json=yes', '--json takes no value'],
    [['a', 'b'], 'b', 'unexpected argument "b"'],
  ] as const) {
    assert.throws(() => parseFlags([...argv], spec, 1), (err: unknown) => err instanceof FlagError && err.arg === arg && err.message === message, argv.join(' '));
  }
});

void test('trigger: flags in any order, the last repeat wins, the same refusals', () => {
  assert.deepEqual(parseTriggerArgs(['--idempotency-key', 'first', '--wait', '60', 'demo', '--reason', 'a', '--reason', 'e2e', '--force', '--json', '--sampling', '30s', '--idempotency-key', 'incident-4711', '--quiet']), {
    target: 'demo',
    reason: 'e2e',
    waitSeconds: 60,
    force: true,
    json: true,
    samplingSeconds: 30,
    idempotencyKey: 'incident-4711',
    quiet: true,
  });
  assert.equal(parseTriggerArgs(['demo']).quiet, false);
  assert.equal(parseTriggerArgs(['demo']).idempotencyKey, undefined);
  assert.throws(() => parseTriggerArgs(['demo', '--idempotency-key', 'has space']), /^\w*Error: --idempotency-key takes 1-255 printable ASCII characters without spaces, got "has space"$/);
  assert.throws(() => parseTriggerArgs(['demo', '--wait', '601']), /^\w*Error: --wait takes whole seconds 0\.\.600, got "601"$/);
  assert.throws(() => parseTriggerArgs(['demo', '--wait']), /^\w*Error: --wait needs a value$/);
  assert.throws(() => parseTriggerArgs(['demo', '--nope']), /^\w*Error: unknown option --nope$/);
  assert.throws(() => parseTriggerArgs(['demo', 'other']), /^\w*Error: unexpected argument "other"$/);
  assert.throws(() => parseTriggerArgs(['--force']), /^\w*Error: which target\? heapcap trigger TARGET$/);
});

void test('schedules create: every flag into the body, selectors merged, numbers checked', () => {
  const { body, json } = parseCreateArgs(['--selector', 'service=checkout', '--selector', 'env=prod', '--every', '30m', '--id', 's1', '--keep-last', '3', '--max-age-days', '1.5', '--max-concurrent', '2', '--reason', 'r', '--gc', '--paused', '--json', '--timezone', 'Europe/Berlin']);
  assert.deepEqual(body, { id: 's1', selector: { service: 'checkout', env: 'prod' }, every: '30m', timezone: 'Europe/Berlin', retention: { keepLast: 3, maxAgeDays: 1.5 }, maxConcurrent: 2, reason: 'r', options: { gc: true }, enabled: false });
  assert.equal(json, true);
  assert.throws(() => parseCreateArgs(['--target', 'a', '--every', '1m', '--keep-last', '1.5']), /--keep-last takes a whole number above 0, got "1.5"/);
  assert.throws(() => parseCreateArgs(['--target', 'a', '--cron', '* * * * *', '--every', '1m']), /give one of --every/);
  assert.throws(() => parseCreateArgs(['--target', 'a', '--every', '1m', 'extra']), /unexpected argument "extra"/);
  assert.throws(() => parseCreateArgs(['--target', 'a', '--every', '1m', '--selector', 'bad']), /--selector takes NAME=VALUE/);
});

void test('status and schedules refuse bad arguments with invalid_input and exit 2 before any call', async () => {
  // An API URL that is never called: each of these is refused before.
  const env = { HEAPCAP_API_URL: 'http://127.0.0.1:1' };
  for (const argv of [[], ['a', 'b'], ['--nope', 'a'], ['--json']]) {
    const err = sink();
    assert.equal(await statusMain(argv, env, { stdout: sink().stream, stderr: err.stream }), 2, argv.join(' '));
    assert.equal(err.text(), `invalid_input: heapcap status takes one capture id\n\n${STATUS_USAGE}`);
  }
  for (const [argv, message] of [
    [['list', 'x'], 'heapcap schedules list takes no arguments, got "x"'],
    [['list', '--nope', '--json'], 'heapcap schedules list takes no arguments, got "--nope"'],
    [['show'], 'heapcap schedules show takes one schedule id'],
    [['pause', 'a', 'b'], 'heapcap schedules pause takes one schedule id'],
    [['delete', '--nope'], 'heapcap schedules delete takes one schedule id'],
    [['create', '--target', 'a'], 'give one of --every DURATION (e.g. 30m) or --cron "EXPR"'],
  ] as const) {
    const err = sink();
    assert.equal(await schedulesMain([...argv], env, { stdout: sink().stream, stderr: err.stream }), 2, argv.join(' '));
    assert.ok(err.text().startsWith(`invalid_input: ${message}\n`), err.text());
  }
});
