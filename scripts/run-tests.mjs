// Runs the static checks, then every *.test.ts of the workspace with Node's
// test runner (TypeScript through tsx). One file at a time: the tests start
// real targets, browsers and servers, and this machine has two cores.
//
// Two runtimes, as the code ships:
// - the service's files (services/* and every package but the three below:
//   analysis, config, queue, slack, storage) run on Node 22, the runtime of
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
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
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
const groups = [];
const serviceFiles = files.filter((f) => !isCli(f));
if (serviceFiles.length > 0) {
  const bin = node22();
  // No AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED here: on Node 22 the SDK has nothing to warn about (services/serve/test/runtime.test.ts checks).
  groups.push({ what: "the service's (the image's runtime)", bin, files: serviceFiles, env: { ...base, HEAPCAP_TEST_NODE22: bin, PATH: `${dirname(bin)}${delimiter}${process.env.PATH ?? ''}` } });
}
const cliFiles = files.filter(isCli);
if (cliFiles.length > 0) {
  // The CLI on Node 20 warns through the AWS SDK when it writes to S3; that is the user's to see, not the tests'.
  groups.push({ what: "the CLI's (the machine's Node)", bin: process.execPath, files: cliFiles, env: { ...base, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } });
}

let status = 0;
for (const g of groups) {
  const version = execFileSync(g.bin, ['--version'], { encoding: 'utf8' }).trim();
  const started = Date.now();
  console.log(`run-tests: ${g.files.length} file(s) on Node ${version}, ${g.what}: ${g.bin}`);
  const res = spawnSync(g.bin, ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=1', ...g.files], { stdio: 'inherit', env: g.env });
  console.log(`run-tests: Node ${version} files ${res.status === 0 ? 'passed' : 'FAILED'} in ${Math.round((Date.now() - started) / 1000)} s`);
  if (res.status !== 0) status = res.status ?? 1;
}
process.exit(status);
