// Runs every *.test.ts of the workspace with Node's test runner (TypeScript
// by Node 22's type stripping, or through tsx on Node 20) and, in a full run, the static checks (scripts/check.mjs) as
// one more job of the same schedule, several at once: most of a
// file's time is spent waiting on the real targets, browsers and servers it
// starts (a snapshot written, an interval elapsed, a process gone), so other
// files fill the wait; every test waits on conditions with deadlines and
// holds on a loaded machine. HEAPCAP_TEST_JOBS (default 2) files always run
// at once, and the checks beside them from the start; up to
// HEAPCAP_TEST_MAX_JOBS (default 6) while the machine's cores have room for
// them (see the scheduler below). Files start longest first
// (scripts/test-durations.json: the last full run's wall and CPU seconds per
// file; HEAPCAP_TEST_DURATIONS=write updates it), each file's output is
// printed whole when it ends, and the run ends with every failed file named.
// HEAPCAP_TEST_JOBS=1 runs one file at a time.
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
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
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

const isCli = (f) => CLI_RUNTIME_DIRS.some((d) => f.startsWith(d));
// HEAPCAP_NICE=0: at nice 10 (the default) beside the CPU hogs of a loaded CI machine every heapcap
// process the tests start would crawl; packages/cli/test/cpu-priority.test.ts checks the default.
// Node 22's path for every file (the CLI's files start Node 22 targets too): looked up here once, not by
// `npx -y node@22` (~1 CPU-s) in each file that needs it.
const bin22 = node22();
const base = {
  ...process.env,
  HEAPCAP_LOG_LEVEL: process.env.HEAPCAP_LOG_LEVEL ?? 'warn',
  HEAPCAP_NICE: process.env.HEAPCAP_NICE ?? '0',
  HEAPCAP_TEST_NODE_SYSTEM: process.env.HEAPCAP_TEST_NODE_SYSTEM ?? process.execPath,
  HEAPCAP_TEST_NODE22: bin22,
  // Node 22's on-disk code cache for every Node 22 process the files start (the suite starts `bin/heapcap`
  // some hundreds of times; with the cache a serve's start costs ~0.7 CPU-s instead of ~0.9). It changes when
  // code is compiled, not what runs; Node 20 ignores it.
  NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? join(tmpdir(), 'heapcap-test-compile-cache'),
};
const runtimes = [];
const serviceFiles = files.filter((f) => !isCli(f));
if (serviceFiles.length > 0) {
  // No AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED here: on Node 22 the SDK has nothing to warn about (services/serve/test/runtime.test.ts checks).
  runtimes.push({ what: "the service's (the image's runtime)", bin: bin22, files: serviceFiles, env: { ...base, PATH: `${dirname(bin22)}${delimiter}${process.env.PATH ?? ''}` } });
}
const cliFiles = files.filter(isCli);
if (cliFiles.length > 0) {
  // The CLI on Node 20 warns through the AWS SDK when it writes to S3; that is the user's to see, not the tests'.
  runtimes.push({ what: "the CLI's (the machine's Node)", bin: process.execPath, files: cliFiles, env: { ...base, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } });
}

const DURATIONS = 'scripts/test-durations.json';
/** @type {Record<string, number | { wall: number, cpu: number }>} the last full run's seconds (wall, and CPU of the file's process tree). */
let known = {};
try {
  known = JSON.parse(readFileSync(DURATIONS, 'utf8'));
} catch {
  // No record yet: every file counts the same.
}
const wallOf = (file) => { const k = known[file]; return typeof k === 'number' ? k : (k?.wall ?? 10); };
/** Cores a file kept busy on average in the last full run (its CPU seconds over its wall seconds); unknown files count as busy. */
const loadOf = (file) => { const k = known[file]; return typeof k === 'object' && k.wall > 0 ? Math.min(2, k.cpu / k.wall) : 1; };

// How many files run at once. HEAPCAP_TEST_JOBS (default 2) files always may,
// whatever they cost: the suite's floor, as before. Most files spend most of
// their wall time waiting on the processes they start (a snapshot written, an
// interval elapsed, a grace period), so up to HEAPCAP_TEST_MAX_JOBS (default
// 6; it was 4, and four of the longest files, waiting, kept a core idle for
// the first minutes) run while there is CPU for them: a further file starts only when the
// recorded loads of the running files plus its own fit in the machine's
// cores, and the machine was idle enough over the last second for its load
// (a CPU hog beside the suite closes that door, and the suite falls back to
// the floor). HEAPCAP_TEST_JOBS=1 runs one file at a time (and no more).
const jobs = Math.max(1, Number(process.env.HEAPCAP_TEST_JOBS ?? 2) || 1);
const maxJobs = process.env.HEAPCAP_TEST_JOBS === '1' ? 1 : Math.max(jobs, Number(process.env.HEAPCAP_TEST_MAX_JOBS ?? 6) || jobs);
const cores = availableParallelism();
/** Cores' worth of recorded load the schedule may start beyond the machine's cores (see fill below). */
const OVERCOMMIT = Number(process.env.HEAPCAP_TEST_OVERCOMMIT ?? 0);
// TypeScript through the runtime's own type stripping where it has it (Node 22.18 and later: the
// service's runtime), else through tsx (Node 20). tsx's loader hooks see every module a file loads
// (node_modules too) and cost a file 0.6 CPU-s (a config test: 1.3 -> 0.6) to 2.5 CPU-s (an API test
// that loads Fastify: 4.5 -> 1.6); the code is erasable syntax only (tsconfig's erasableSyntaxOnly),
// which is what stripping takes.
const stripsTypes = (bin) => execFileSync(bin, ['-p', 'process.features.typescript ?? ""'], { encoding: 'utf8' }).trim() === 'strip';
for (const r of runtimes) r.loader = stripsTypes(r.bin) ? [] : ['--import', 'tsx'];
const testArgs = (file, runtime) => [...runtime.loader, '--test', '--test-reporter=spec', file];
const jobsToRun = runtimes.flatMap((r) => r.files.map((file) => ({ file, runtime: r, args: testArgs(file, r), load: loadOf(file) })));
// A full run does the static checks too, as one more job beside the test files rather than before them:
// tsc and ESLint keep about one and a half cores busy for a minute, the test files' waits have room for
// that, and CI no longer spends the minute with the tests not started. A failed check fails the run
// like a failed file, and its output is printed the same way.
const CHECK = 'scripts/check.mjs';
if (only.length === 0) {
  runtimes.push({ what: 'the static checks', bin: process.execPath, files: [], env: { ...process.env } });
  jobsToRun.push({ file: CHECK, runtime: runtimes.at(-1), args: [CHECK], load: loadOf(CHECK) });
}
const queue = jobsToRun.sort((a, b) => wallOf(b.file) - wallOf(a.file) || a.file.localeCompare(b.file));
for (const r of runtimes) {
  const version = execFileSync(r.bin, ['--version'], { encoding: 'utf8' }).trim();
  r.version = version;
  if (r.files.length > 0) console.log(`run-tests: ${r.files.length} file(s) on Node ${version} (TypeScript ${r.loader.length > 0 ? 'through tsx' : "by Node's type stripping"}), ${r.what}: ${r.bin}`);
}
console.log(`run-tests: ${queue.length} file(s), ${jobs} at a time, up to ${maxJobs} while ${cores} core(s) have room`);

/** Runs one test file in its own runner; resolves with its exit status, output, wall seconds and the CPU seconds of its process tree. */
function runFile({ file, runtime, args }) {
  return new Promise((resolve) => {
    const started = Date.now();
    // bash's `times` prints the CPU its reaped children used (the test process and every process it
    // started and waited for): the file's cost, which the next run's scheduling uses.
    const child = spawn('bash', ['-c', '"$@"; rc=$?; times >&3; exit $rc', 'run-tests', runtime.bin, ...args], {
      env: runtime.env,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    });
    const out = [];
    const times = [];
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => out.push(b));
    child.stdio[3].on('data', (b) => times.push(b));
    child.on('close', (code, signal) => {
      const children = Buffer.concat(times).toString('utf8').trim().split('\n').at(-1) ?? '';
      const cpu = [...children.matchAll(/(\d+)m([\d.]+)s/g)].reduce((t, m) => t + Number(m[1]) * 60 + Number(m[2]), 0);
      resolve({ file, runtime, status: code ?? (signal === null ? 1 : 128), output: Buffer.concat(out).toString('utf8'), seconds: (Date.now() - started) / 1000, cpu });
    });
  });
}

/** The share of the machine's CPU time that was idle since the previous call (from /proc/stat; 1 where it cannot be read). */
let lastStat;
function idleShare() {
  let fields;
  try {
    fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  } catch {
    return 1;
  }
  const idle = fields[3] + (fields[4] ?? 0);
  const total = fields.reduce((a, b) => a + b, 0);
  const prev = lastStat;
  lastStat = { idle, total };
  return prev === undefined || total === prev.total ? 1 : (idle - prev.idle) / (total - prev.total);
}

const started = Date.now();
const results = [];
const running = new Set();
let peak = 0;
await new Promise((done) => {
  const report = (r) => {
    results.push(r);
    // `ended at`: seconds since the run started, and the files still running: where the schedule left cores idle.
    process.stdout.write(`\n── ${r.file} (Node ${r.runtime.version}): ${r.status === 0 ? 'passed' : 'FAILED'} in ${r.seconds.toFixed(1)} s (${r.cpu.toFixed(1)} CPU-s), ended at ${Math.round((Date.now() - started) / 1000)} s with ${running.size} running\n${r.output}`);
  };
  const start = (job) => {
    queue.splice(queue.indexOf(job), 1);
    running.add(job);
    peak = Math.max(peak, running.size);
    void runFile(job).then((r) => {
      running.delete(job);
      report(r);
      fill(false);
    });
  };
  const fill = (tick) => {
    // The checks do not count toward the floor: they start at once, beside the longest files.
    while (queue.length > 0 && [...running].filter((j) => j.file !== CHECK).length < jobs) start(queue[0]);
    // Beyond the floor only on the once-a-second tick, so the idle share is measured over a second.
    if (tick && queue.length > 0 && running.size < maxJobs) {
      const idleCores = idleShare() * cores;
      const busy = [...running].reduce((t, j) => t + j.load, 0);
      // Longest first, but a lighter file may go ahead of one that does not fit. No overcommit by
      // default (HEAPCAP_TEST_OVERCOMMIT, in cores): replaying a quiet run's loads through this
      // schedule promised 760 s at half a core against 838 s at none, but measured from fresh clones
      // on a quiet machine half a core took 876 s and 1,460 CPU-s against 834 s and 1,375 CPU-s: the
      // cores were busier (93-97 % a minute) and the files, slowed by each other, spent it polling.
      const job = queue.find((j) => busy + j.load <= cores + OVERCOMMIT && j.load <= idleCores - 0.25 + OVERCOMMIT);
      if (job !== undefined) start(job);
    }
    if (queue.length === 0 && running.size === 0) {
      clearInterval(timer);
      done();
    }
  };
  const timer = setInterval(() => fill(true), 1000);
  idleShare();
  // The checks first: about a core and a half for a minute (tsc, ESLint), at the start of the run, where
  // the longest files mostly wait on the processes they start. Admitted by load like any other file they
  // found no room until minute four and ran where the cores were already full.
  const check = queue.find((j) => j.file === CHECK);
  if (check !== undefined) start(check);
  fill(false);
});

const failed = results.filter((r) => r.status !== 0);
const total = Math.round((Date.now() - started) / 1000);
console.log(`\nrun-tests: ${results.length - failed.length} of ${results.length} file(s) passed in ${total} s (${jobs} to ${peak} at a time; ${Math.round(results.reduce((t, r) => t + r.seconds, 0))} s of files, ${Math.round(results.reduce((t, r) => t + r.cpu, 0))} CPU-s)`);
for (const r of results.filter((x) => x.seconds >= 20).sort((a, b) => b.seconds - a.seconds)) console.log(`  ${r.seconds.toFixed(0).padStart(4)} s  ${r.file}`);
if (failed.length > 0) {
  console.log(`run-tests: FAILED: ${failed.length} file(s)`);
  for (const r of failed) console.log(`  ${r.file} (exit ${r.status})`);
  // CI keeps only the end of the log: repeat each failed file's output here, its tail if long.
  for (const r of failed) {
    const lines = r.output.trimEnd().split('\n');
    console.log(`\n── again, the output of ${r.file} (FAILED)${lines.length > 150 ? `, its last 150 of ${lines.length} lines` : ''}:`);
    console.log(lines.slice(-150).join('\n'));
  }
  console.log(`run-tests: FAILED: ${failed.map((r) => r.file).join(', ')}`);
}
if (process.env.HEAPCAP_TEST_DURATIONS === 'write' && only.length === 0) {
  const record = Object.fromEntries(results.map((r) => [r.file, { wall: Math.round(r.seconds * 10) / 10, cpu: Math.round(r.cpu * 10) / 10 }]).sort((a, b) => a[0].localeCompare(b[0])));
  writeFileSync(DURATIONS, `${JSON.stringify(record, null, 1)}\n`);
  console.log(`run-tests: wrote ${DURATIONS}`);
}
process.exit(failed.length > 0 ? 1 : 0);
