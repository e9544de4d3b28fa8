// Runs the static checks, then every *.test.ts of the workspace with Node's
// test runner (TypeScript through tsx). Two files at a time (HEAPCAP_TEST_JOBS,
// default 2): most of a file's time is spent waiting on the real targets,
// browsers and servers it starts (a snapshot written, an interval elapsed, a
// process gone), so a second file fills the wait; every test waits on
// conditions with deadlines and holds on a loaded machine, which is what a
// second file makes. Files start longest first (scripts/test-durations.json,
// the last full run's times; HEAPCAP_TEST_DURATIONS=write updates it), each
// file's output is printed whole when it ends, and the run ends with every
// failed file named. HEAPCAP_TEST_JOBS=1 runs one file at a time.
//
// Two runtimes, as the code ships:
// - the service's files (services/* and every package but the three below:
//   analysis, config, state, slack, storage) run on Node 22, the runtime of
//   deploy/Dockerfile's image;
//   its bin directory goes first on PATH, so `bin/heapcap serve` (which execs
//   `node`) and every child spawned through process.execPath run on it too;
// - the CLI's files (packages/cli, packages/capture, packages/testkit) run on
//   the Node that runs this script: the machine's (20 here), the CLI's floor
//   (`engines` >=20 at the workspace root). capture is the worker's too: the
//   worker's tests run it on Node 22.
// Node targets keep the runtime each test names: testkit's 'system' is the
// Node that runs this script (HEAPCAP_TEST_NODE_SYSTEM), '22' and '18' come
// from npm's `node` package, whatever runtime the test file itself runs on.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';

const roots = ['packages', 'services'];
/** Test files that run on the machine's Node (the CLI's floor); the rest run on the image's Node 22. */
const CLI_RUNTIME_DIRS = ['packages/cli/', 'packages/capture/', 'packages/testkit/'];
const only = process.argv.slice(2);

function findTests(dir, out) {
  let entries;
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of entries) {
    if (name === 'node_modules') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) findTests(p, out);
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

/** Node 22's binary: HEAPCAP_TEST_NODE22, else npm's `node@22` through npx (scripts/test-deps.sh fetched it). */
function node22() {
  const override = process.env.HEAPCAP_TEST_NODE22;
  if (override) return override;
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  try {
    // cwd outside the workspace so npx does not consult its package.json.
    const out = execFileSync('npx', ['-y', 'node@22', '-p', 'process.execPath'], { cwd: tmpdir(), env, encoding: 'utf8', timeout: 180_000, stdio: ['ignore', 'pipe', 'pipe'] });
    return out.trim().split('\n').pop();
  } catch (err) {
    console.error(`run-tests: cannot get Node 22 for the service's tests: ${err.message}\nrun scripts/test-deps.sh, or set HEAPCAP_TEST_NODE22 to a Node 22 binary`);
    process.exit(1);
  }
}

let files = roots.flatMap((r) => findTests(r, [])).sort();
if (only.length > 0) files = files.filter((f) => only.some((o) => f.includes(o)));
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}

if (only.length === 0) {
  const check = spawnSync(process.execPath, ['scripts/check.mjs'], { stdio: 'inherit' });
  if (check.status !== 0) process.exit(check.status ?? 1);
}

const isCli = (f) => CLI_RUNTIME_DIRS.some((d) => f.startsWith(d));
// HEAPCAP_NICE=0: at nice 10 (the default) beside the CPU hogs of a loaded CI machine every heapcap
// process the tests start would crawl; packages/cli/test/cpu-priority.test.ts checks the default.
const base = { ...process.env, HEAPCAP_LOG_LEVEL: process.env.HEAPCAP_LOG_LEVEL ?? 'warn', HEAPCAP_NICE: process.env.HEAPCAP_NICE ?? '0', HEAPCAP_TEST_NODE_SYSTEM: process.env.HEAPCAP_TEST_NODE_SYSTEM ?? process.execPath };
const runtimes = [];
const serviceFiles = files.filter((f) => !isCli(f));
if (serviceFiles.length > 0) {
  const bin = node22();
  // No AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED here: on Node 22 the SDK has nothing to warn about (services/serve/test/runtime.test.ts checks).
  runtimes.push({ what: "the service's (the image's runtime)", bin, files: serviceFiles, env: { ...base, HEAPCAP_TEST_NODE22: bin, PATH: `${dirname(bin)}${delimiter}${process.env.PATH ?? ''}` } });
}
const cliFiles = files.filter(isCli);
if (cliFiles.length > 0) {
  // The CLI on Node 20 warns through the AWS SDK when it writes to S3; that is the user's to see, not the tests'.
  runtimes.push({ what: "the CLI's (the machine's Node)", bin: process.execPath, files: cliFiles, env: { ...base, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } });
}

const DURATIONS = 'scripts/test-durations.json';
let known = {};
try {
  known = JSON.parse(readFileSync(DURATIONS, 'utf8'));
} catch {
  // No record yet: every file counts the same.
}
const jobs = Math.max(1, Number(process.env.HEAPCAP_TEST_JOBS ?? 2) || 1);
const queue = runtimes
  .flatMap((r) => r.files.map((file) => ({ file, runtime: r })))
  .sort((a, b) => (known[b.file] ?? 10) - (known[a.file] ?? 10) || a.file.localeCompare(b.file));
for (const r of runtimes) {
  const version = execFileSync(r.bin, ['--version'], { encoding: 'utf8' }).trim();
  r.version = version;
  console.log(`run-tests: ${r.files.length} file(s) on Node ${version}, ${r.what}: ${r.bin}`);
}
console.log(`run-tests: ${queue.length} file(s), ${jobs} at a time`);

/** Runs one test file in its own runner; resolves with its exit status, output and seconds. */
function runFile({ file, runtime }) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(runtime.bin, ['--import', 'tsx', '--test', '--test-reporter=spec', file], { env: runtime.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => out.push(b));
    child.on('close', (code, signal) => resolve({ file, runtime, status: code ?? (signal === null ? 1 : 128), output: Buffer.concat(out).toString('utf8'), seconds: (Date.now() - started) / 1000 }));
  });
}

const started = Date.now();
const results = [];
let next = 0;
async function lane() {
  while (next < queue.length) {
    const job = queue[next++];
    const r = await runFile(job);
    results.push(r);
    process.stdout.write(`\n── ${r.file} (Node ${r.runtime.version}): ${r.status === 0 ? 'passed' : 'FAILED'} in ${r.seconds.toFixed(1)} s\n${r.output}`);
  }
}
await Promise.all(Array.from({ length: Math.min(jobs, queue.length) }, lane));

const failed = results.filter((r) => r.status !== 0);
const total = Math.round((Date.now() - started) / 1000);
console.log(`\nrun-tests: ${results.length - failed.length} of ${results.length} file(s) passed in ${total} s (${jobs} at a time; ${Math.round(results.reduce((t, r) => t + r.seconds, 0))} s of files)`);
for (const r of results.filter((x) => x.seconds >= 20).sort((a, b) => b.seconds - a.seconds)) console.log(`  ${r.seconds.toFixed(0).padStart(4)} s  ${r.file}`);
if (failed.length > 0) {
  console.log(`run-tests: FAILED: ${failed.length} file(s)`);
  for (const r of failed) console.log(`  ${r.file} (exit ${r.status})`);
}
if (process.env.HEAPCAP_TEST_DURATIONS === 'write' && only.length === 0) {
  const record = Object.fromEntries(results.map((r) => [r.file, Math.round(r.seconds * 10) / 10]).sort((a, b) => a[0].localeCompare(b[0])));
  writeFileSync(DURATIONS, `${JSON.stringify(record, null, 1)}\n`);
  console.log(`run-tests: wrote ${DURATIONS}`);
}
process.exit(failed.length > 0 ? 1 : 0);
