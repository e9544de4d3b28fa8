// Runs the static checks, then every *.test.ts of the workspace with Node's
// test runner (TypeScript through tsx). One file at a time: the tests start
// real targets, browsers and servers, and this machine has two cores.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const roots = ['packages', 'services'];
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

const res = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=1', ...files],
  { stdio: 'inherit', env: { ...process.env, HEAPCAP_LOG_LEVEL: process.env.HEAPCAP_LOG_LEVEL ?? 'warn', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } },
);
process.exit(res.status ?? 1);
