/**
 * heapcap installs like a tool: `node scripts/pack-npm.mjs` packs the `heapcap`
 * npm package (deploy/npm + the esbuild bundle), `npm install <tarball>` puts it
 * into an empty directory outside the workspace (offline: the package must need
 * nothing from a registry), and the installed command, run as users run it
 * (`npx heapcap …`), prints the package's version and captures a real Node
 * target started with --inspect, on node with bin/heapcap's V8 flags.
 */
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { isBuiltin } from 'node:module';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { assertGoodArtifact, commandEnv, countObjects, fixturePath, HEAPCAP_BIN, heapHolderShape, readManifests, REPO_ROOT, runCommand, startNodeTarget, tmpDir, waitFor, type NodeTarget, type TmpDir } from '@heapcap/testkit';

const HEAP_MB = 5;

let target: NodeTarget;
let work: TmpDir;
/** The empty directory the package is installed into. */
let app: string;
let tarball: string;

before(async () => {
  [target, work] = await Promise.all([startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: String(HEAP_MB) } }), tmpDir('heapcap-npm')]);
  const pack = await runCommand(process.execPath, [join(REPO_ROOT, 'scripts/pack-npm.mjs'), '--out', work.path], { timeoutMs: 180_000 });
  assert.equal(pack.code, 0, pack.stderr);
  tarball = pack.stdout.trim().split('\n').at(-1)!;
  app = join(work.path, 'app');
  await mkdir(app);
  // --offline: an install that reached for a dependency would fail here instead of passing on a networked CI.
  const install = await runCommand('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball], { cwd: app, timeoutMs: 120_000 });
  assert.equal(install.code, 0, `npm install: ${install.stdout}${install.stderr}`);
});
after(async () => {
  await target?.kill();
  await work?.cleanup();
});

void test('the tarball holds the bin script and the bundle; the installed package declares and brings no dependency', async () => {
  const pkg = JSON.parse(await readFile(join(app, 'node_modules/heapcap/package.json'), 'utf8')) as { name: string; bin: Record<string, string>; dependencies?: unknown };
  assert.equal(pkg.name, 'heapcap');
  assert.deepEqual(pkg.bin, { heapcap: 'bin/heapcap' });
  assert.equal(pkg.dependencies, undefined);
  assert.deepEqual(await readdir(join(app, 'node_modules')).then((names) => names.filter((n) => !n.startsWith('.'))), ['heapcap'], 'nothing but heapcap installed');
  const dist = join(app, 'node_modules/heapcap/dist');
  const files = await readdir(dist);
  for (const f of ['heapcap.mjs', 'fifo-reader-thread.mjs']) assert.ok(files.includes(f), `dist/${f} in the package`);
  // Every module an ES import names (static or dynamic) is a chunk beside it or a Node built-in: one that is
  // neither would fail at load with no node_modules to find it in.
  for (const f of files.filter((n) => n.endsWith('.mjs'))) {
    const text = await readFile(join(dist, f), 'utf8');
    const specifiers = [...text.matchAll(/(?:^import\s[^;]*?from\s*|^import\s*|\bimport\()"([^"]+)"/gm)].map((m) => m[1]!);
    for (const s of specifiers) assert.ok(s.startsWith('./') || isBuiltin(s), `dist/${f} imports ${s}, which the package does not carry`);
  }
});

void test('every docs/*.md the command or its README names is in the package (its messages say "see docs/configuration.md")', async () => {
  const root = join(app, 'node_modules/heapcap');
  const dist = join(root, 'dist');
  const texts = [await readFile(join(root, 'README.md'), 'utf8')];
  for (const f of (await readdir(dist)).filter((n) => n.endsWith('.mjs'))) texts.push(await readFile(join(dist, f), 'utf8'));
  const named = new Set(texts.flatMap((t) => [...t.matchAll(/\bdocs\/([a-z0-9-]+\.md)\b/g)].map((m) => m[1]!)));
  assert.ok(named.has('configuration.md'), `the bundle names docs/configuration.md: ${[...named].join(', ')}`);
  const shipped = new Set(await readdir(join(root, 'docs')));
  const missing = [...named].filter((f) => !shipped.has(f));
  assert.deepEqual(missing, [], `named but not shipped: ${missing.join(', ')}`);
});

void test('npx heapcap --version prints the package version', async () => {
  const pkg = JSON.parse(await readFile(join(app, 'node_modules/heapcap/package.json'), 'utf8')) as { version: string };
  assert.match(tarball, new RegExp(`heapcap-${pkg.version.replaceAll('.', '\\.')}\\.tgz$`));
  const res = await runCommand('npx', ['--offline', 'heapcap', '--version'], { cwd: app });
  assert.equal(res.code, 0, res.stderr);
  assert.equal(res.stdout.trim(), pkg.version);
});

void test('npx heapcap capture --node captures a real Node target into a local directory', async () => {
  const out = join(work.path, 'captures');
  const res = await runCommand('npx', ['--offline', 'heapcap', 'capture', '--node', `127.0.0.1:${target.port}`, '--out', out, '--json'], { cwd: app });
  assert.equal(res.code, 0, res.stderr);
  const m = await readManifests(res.stdout);
  assert.ok(m.artifact.location.startsWith(`${out}/`), `the artifact ${m.artifact.location} is under ${out}`);
  assert.equal(countObjects(await assertGoodArtifact(m), 'Order'), heapHolderShape(HEAP_MB).orders);
});

void test('the installed command is node itself (exec, no second process) with the V8 flags bin/heapcap gives it', async () => {
  // bin/heapcap's flags are the reference: one place says what they are.
  const flags = [...(await readFile(HEAPCAP_BIN, 'utf8')).matchAll(/^exec node ((?:--[a-z-]+=\S+ )+)"\$bundle"/gm)].flatMap((m) => m[1]!.trim().split(' '));
  assert.deepEqual(flags, ['--max-semi-space-size=2']);
  // The target stopped: the capture waits on it, so its process can be looked at while it runs.
  process.kill(target.pid, 'SIGSTOP');
  const child = spawn(join(app, 'node_modules/.bin/heapcap'), ['capture', '--node', `127.0.0.1:${target.port}`, '--out', join(work.path, 'flags'), '--quiet'], { cwd: app, env: commandEnv(), stdio: 'ignore' });
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  let argv: string[];
  try {
    argv = await waitFor(
      async () => {
        const cmdline = (await readFile(`/proc/${child.pid}/cmdline`, 'utf8').catch(() => '')).split('\0').filter((a) => a !== '');
        return cmdline.some((a) => a.endsWith('/dist/heapcap.mjs')) ? cmdline : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 20, what: 'the installed command running the bundle' },
    );
  } finally {
    process.kill(target.pid, 'SIGCONT');
  }
  assert.equal(await exited, 0);
  // The pid spawned runs node with the bundle: the shell script exec'd node, it did not start it beside itself.
  assert.deepEqual(argv.slice(1, 1 + flags.length), flags, argv.join(' '));
  assert.match(argv[0]!, /(^|\/)node$/);
});
