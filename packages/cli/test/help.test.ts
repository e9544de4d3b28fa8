/**
 * Help a person can act on, through the shipped command (bin/heapcap): every
 * command's --help has examples; a mistyped command, subcommand, flag or
 * HEAPCAP_* setting is answered with the closest real one; `heapcap completion
 * bash|zsh` prints scripts that real bash and zsh run and that complete
 * commands, subcommands and flags.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { runHeapcap, tmpDir, type TmpDir } from '@heapcap/testkit';

let dir: TmpDir;
before(async () => {
  dir = await tmpDir('heapcap-help');
});
after(async () => {
  await dir?.cleanup();
});

const HELP = [
  ['--help'],
  ['capture', '--help'],
  ['serve', '--help'],
  ['api', '--help'],
  ['worker', '--help'],
  ['trigger', '--help'],
  ['status', '--help'],
  ['analyze', '--help'],
  ['diff', '--help'],
  ['schedules', '--help'],
  ['hunt', '--help'],
  ['completion', '--help'],
  ['targets', '--help'],
  ['targets', 'add', '--help'],
  ['captures', '--help'],
  ['captures', 'download', '--help'],
  ['captures', 'list', '--help'],
  ['profiles', '--help'],
  ['profiles', 'download', '--help'],
  ['watch', '--help'],
  ['watch', 'create', '--help'],
];

void test('every command and subcommand --help shows examples of itself', { timeout: 120_000 }, async () => {
  for (const args of HELP) {
    const res = await runHeapcap(args);
    assert.equal(res.code, 0, `${args.join(' ')}: ${res.stderr}`);
    const examples = res.stdout.split('\nExamples:\n')[1];
    assert.ok(examples !== undefined, `heapcap ${args.join(' ')} has no Examples: section:\n${res.stdout}`);
    // The examples run the command whose help this is (the top-level help shows several).
    const own = args[0] === '--help' ? 'heapcap ' : args[0] === 'completion' ? 'heapcap completion' : `heapcap ${args.filter((a) => a !== '--help').join(' ')}`;
    assert.ok(examples.split('\n').some((l) => l.includes(own)), `heapcap ${args.join(' ')}: no example of "${own}":\n${examples}`);
  }
});

void test('heapcap capture --help shows the usage it accepts: a target flag, no positional TARGET (which it refuses)', { timeout: 60_000 }, async () => {
  const help = await runHeapcap(['capture', '--help']);
  const usage = help.stdout.split('\n')[0]!;
  assert.match(usage, /^Usage: heapcap capture \(--node HOST:PORT \| --ws URL \| --chromium HOST:PORT \| --pid N\) \[options\]$/, usage);
  // What the old usage line suggested is refused: the help must not show it.
  const positional = await runHeapcap(['capture', '127.0.0.1:9229', '--dry-run']);
  assert.notEqual(positional.code, 0, positional.stdout);
  assert.doesNotMatch(usage, /capture TARGET/);
});

void test('did you mean: commands, subcommands, flags and HEAPCAP_* settings', { timeout: 60_000 }, async () => {
  const cases: [string[], Record<string, string>, RegExp][] = [
    [['captrue', '--node', '1:2'], {}, /^invalid_input: unknown command "captrue" \(did you mean "capture"\?\)/],
    [['captures', 'downlod', 'X'], {}, /^invalid_input: unknown subcommand "heapcap captures downlod" \(did you mean "download"\?\)/],
    [['capture', '--nod', '127.0.0.1:9229'], {}, /^invalid_input: unknown option --nod \(did you mean "--node"\?\)/],
    [['trigger', 'checkout-1', '--wiat', '5'], {}, /^invalid_input: unknown option --wiat \(did you mean "--wait"\?\)/],
    [['watch', 'create', '--target', 'x', '--metirc', 'rssBytes'], {}, /^invalid_input: unknown option --metirc \(did you mean "--metric"\?\)/],
    [['hunt', 'start', 'x', '--intreval', '5s'], {}, /^invalid_input: unknown option --intreval \(did you mean "--interval"\?\)/],
    [['serve', '--dve'], {}, /unknown argument "--dve" for heapcap serve \(did you mean "--dev"\?\)/],
    [['api', '--dve'], {}, /^invalid_input: unknown argument "--dve" \(did you mean "--dev"\?\)/],
    [['completion', 'bsh'], {}, /^invalid_input: heapcap completion takes bash or zsh, not "bsh" \(did you mean "bash"\?\)/],
    [['version'], { HEAPCAP_STORGE: join(dir.path, 'c') }, /^invalid_config: invalid configuration:\n {2}HEAPCAP_STORGE: unknown setting \(did you mean HEAPCAP_STORAGE\?\)/],
    [['version'], { HEAPCAP_TOKNE: 'x' }, /HEAPCAP_TOKNE: unknown setting \(did you mean HEAPCAP_TOKEN\?\)/],
  ];
  for (const [args, env, expected] of cases) {
    const res = await runHeapcap(args, { env });
    assert.equal(res.code, 2, `${args.join(' ')}: ${res.stderr}`);
    assert.match(res.stderr, expected);
  }
  // Nothing close: no guess.
  const far = await runHeapcap(['frobnicate']);
  assert.equal(far.code, 2);
  assert.match(far.stderr, /^invalid_input: unknown command "frobnicate"\n/);
  const farEnv = await runHeapcap(['version'], { env: { HEAPCAP_XYZZY_QUUX: '1' } });
  assert.match(farEnv.stderr, /HEAPCAP_XYZZY_QUUX: unknown setting \(check the spelling; see docs\/configuration\.md\)/);
});

/** Run `script` after sourcing the completion file in `shell`; its stdout lines. */
function inShell(shell: 'bash' | 'zsh', file: string, script: string): string[] {
  const res = spawnSync(shell, shell === 'zsh' ? ['-f', '-c', script] : ['--norc', '-c', script], { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', FILE: file } });
  assert.equal(res.status, 0, res.stderr);
  return res.stdout.split('\n').filter((l) => l !== '');
}

void test('heapcap completion bash: bash completes commands, subcommands and flags, and registers for heapcap', { timeout: 60_000 }, async () => {
  const res = await runHeapcap(['completion', 'bash']);
  assert.equal(res.code, 0, res.stderr);
  const file = join(dir.path, 'heapcap.bash');
  await writeFile(file, res.stdout);
  const complete = (...words: string[]): string[] =>
    inShell('bash', file, `source "$FILE"; COMP_WORDS=(heapcap ${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length}; _heapcap; printf '%s\\n' "\${COMPREPLY[@]}"`);
  assert.deepEqual(complete('capt'), ['capture', 'captures']);
  assert.deepEqual(complete('captures', 'd'), ['download', 'delete']);
  assert.deepEqual(complete('captures', 'download', 'ID', '--g'), ['--gz']);
  assert.deepEqual(complete('capture', '--no'), ['--node', '--no-warm', '--no-gzip']);
  assert.deepEqual(complete('watch', 'create', '--met'), ['--metric']);
  assert.deepEqual(complete('completion', ''), ['bash', 'zsh']);
  assert.deepEqual(inShell('bash', file, 'source "$FILE"; complete -p heapcap'), ['complete -o default -F _heapcap heapcap']);
});

void test('heapcap completion zsh: zsh offers the same words, and files where a command takes them', { timeout: 60_000 }, async () => {
  const res = await runHeapcap(['completion', 'zsh']);
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stdout, /^#compdef heapcap\n/);
  const file = join(dir.path, '_heapcap');
  await writeFile(file, res.stdout);
  // compadd and _files are zsh's completion builtins (live only inside the line editor): stand-ins print what they were given.
  const complete = (...words: string[]): string[] =>
    inShell('zsh', file, `compadd() { shift; print -l -- "$@"; }; _files() { print '<files>'; }; compdef() { :; }; source "$FILE"; words=(heapcap ${words.map((w) => `'${w}'`).join(' ')}); CURRENT=${words.length + 1}; _heapcap`);
  assert.deepEqual(inShell('zsh', file, 'compdef() { print "compdef $*"; }; source "$FILE"'), ['compdef _heapcap heapcap']);
  const top = complete('');
  assert.ok(top.includes('captures') && top.includes('watch') && top.includes('targets'), top.join(' '));
  assert.deepEqual(complete('hunt', ''), ['start', 'show']);
  assert.deepEqual(complete('targets', 'add', 'x', '--'), ['--inspect', '--ws', '--pid', '--port', '--browser', '--url-pattern', '--title-pattern', '--page-type', '--first', '--label', '--memory-limit', '--group', '--placement', '--replace', '--json', '--help']);
  assert.equal(complete('analyze', './sn').at(-1), '<files>');
});
