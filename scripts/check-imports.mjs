// The architecture's import rules, enforced. One table (ALLOWED) says which
// workspace unit may import which; every .ts file under packages/, services/,
// bench/ and scripts/ is checked against it, and the check fails on any import
// cycle between files or between units, type-only imports included: a cycle
// of types is still two files that cannot be understood (or moved) apart, and
// the shared types belong in a file both import (a package's types.ts).
// `--graph` prints the graph of units by their run-time imports
// (docs/architecture.md shows it).
//
// A unit is a package (packages/NAME), a service (services/NAME), the benches
// (bench) or the scripts (scripts). Imports of another unit go through its
// `@heapcap/NAME` entry point (or a subpath export); a relative import never
// leaves its unit. Files under a `test/` folder may also import the test kit,
// and a service's tests may start the other services.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');

/** Which units each unit's sources may import (besides itself). The one table of the architecture. */
export const ALLOWED = {
  // Leaves.
  errors: [],
  config: ['errors'],
  // The engine and the backing stores know nothing of each other.
  capture: ['errors', 'config'],
  storage: ['errors', 'config'],
  state: ['errors', 'config'],
  analysis: ['errors'],
  // Slack's protocol, messages and reply delivery, shared by the api and the worker.
  slack: ['errors', 'config', 'state', 'storage'],
  // The capture job, and how a service starts and stops.
  pipeline: ['errors', 'config', 'capture', 'storage', 'analysis'],
  service: ['errors', 'config', 'state', 'storage'],
  // The command (services are passed in by the entry point, never imported).
  cli: ['errors', 'config', 'capture', 'storage', 'pipeline', 'analysis'],
  // Test-only: real targets, browsers and servers.
  testkit: ['errors', 'config', 'state', 'storage'],
  // Composition roots.
  api: ['errors', 'config', 'state', 'storage', 'service', 'analysis', 'slack'],
  worker: ['errors', 'config', 'capture', 'state', 'storage', 'pipeline', 'service', 'analysis', 'slack'],
  serve: ['errors', 'config', 'cli', 'service', 'api', 'worker'],
  // The web console runs in the browser and talks to the API over HTTP only: it imports nothing of ours.
  console: [],
  bench: ['errors', 'config', 'capture', 'storage', 'state', 'analysis', 'pipeline', 'service', 'api', 'worker', 'testkit'],
  scripts: ['errors', 'config', 'storage', 'testkit'],
};
/** What a file under a `test/` folder may import besides its unit's sources' allowance. */
const TEST_EXTRA = {
  packages: ['testkit'],
  services: ['testkit', 'api', 'worker', 'cli'],
};

const PACKAGES = new Set(readdirSync(join(ROOT, 'packages')).filter((n) => statSync(join(ROOT, 'packages', n)).isDirectory()));
const SERVICES = new Set(readdirSync(join(ROOT, 'services')).filter((n) => statSync(join(ROOT, 'services', n)).isDirectory()));

function walk(dir, out = []) {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'out') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (/\.(ts|mts|tsx)$/.test(name) && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** The unit a file belongs to: { area: packages|services|bench|scripts, name }. */
function unitOf(file) {
  const [area, name] = relative(ROOT, file).split('/');
  return area === 'packages' || area === 'services' ? { area, name } : { area, name: area };
}

/** Where `@heapcap/NAME[/sub]` lives: its unit and the entry file (package.json exports). */
function resolveWorkspace(spec) {
  const [name, sub] = spec.slice('@heapcap/'.length).split('/');
  const area = PACKAGES.has(name) ? 'packages' : SERVICES.has(name) ? 'services' : undefined;
  if (area === undefined) return { name, area, file: undefined };
  const pkgJson = join(ROOT, area, name, 'package.json');
  let entry = `./src/${sub ?? 'index'}.ts`;
  if (existsSync(pkgJson)) {
    const exp = JSON.parse(readFileSync(pkgJson, 'utf8')).exports ?? {};
    entry = exp[sub === undefined ? '.' : `./${sub}`] ?? entry;
  }
  return { name, area, file: join(ROOT, area, name, entry) };
}

const files = [...walk(join(ROOT, 'packages')), ...walk(join(ROOT, 'services')), ...walk(join(ROOT, 'bench')), ...walk(join(ROOT, 'scripts'))];
const importRe = /(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?(?:[^'"]*?\sfrom\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;
const problems = [];
/** file → files it imports, type-only imports included. */
const fileGraph = new Map();
/** unit → units its sources import, type-only included (tests excluded: they may use the kit that imports them back). */
const unitGraph = new Map();
/** unit → units its sources import at run time (what `--graph` prints). */
const runtimeUnitGraph = new Map();

for (const file of files) {
  const src = readFileSync(file, 'utf8');
  const from = unitOf(file);
  const rel = relative(ROOT, file);
  const isTest = rel.split('/').includes('test');
  const allowed = new Set([...(ALLOWED[from.name] ?? []), ...(isTest ? (TEST_EXTRA[from.area] ?? []) : [])]);
  if (ALLOWED[from.name] === undefined) problems.push(`${rel}: unit "${from.name}" is not in the ALLOWED table of scripts/check-imports.mjs`);
  const edges = [];
  for (const m of src.matchAll(importRe)) {
    const spec = m[1] ?? m[2];
    const typeOnly = /^\s*(import|export)\s+type\b/.test(m[0].trimStart());
    let target;
    if (spec.startsWith('@heapcap/')) {
      const to = resolveWorkspace(spec);
      if (to.area === undefined) {
        problems.push(`${rel}: imports ${spec}, which is not a workspace package or service`);
        continue;
      }
      target = to.file;
      if (to.name !== from.name && !allowed.has(to.name)) {
        problems.push(`${rel}: ${from.name} may not import @heapcap/${to.name} (see ALLOWED in scripts/check-imports.mjs and docs/architecture.md)`);
      }
      if (!isTest && to.name !== from.name) {
        for (const graph of typeOnly ? [unitGraph] : [unitGraph, runtimeUnitGraph]) {
          if (!graph.has(from.name)) graph.set(from.name, new Set());
          graph.get(from.name).add(to.name);
        }
      }
    } else if (spec.startsWith('.')) {
      target = resolve(dirname(file), spec);
      const toUnit = unitOf(target);
      if (toUnit.name !== from.name) problems.push(`${rel}: relative import leaves its unit (${spec}); import @heapcap/${toUnit.name} instead`);
    } else continue;
    if (target !== undefined && existsSync(target)) edges.push(target);
  }
  fileGraph.set(file, edges);
}

/** Depth-first search with colours; reports each cycle found. */
function findCycles(graph, label) {
  const colour = new Map();
  const stack = [];
  const visit = (node) => {
    colour.set(node, 'grey');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      const c = colour.get(next);
      if (c === 'grey') problems.push(`import cycle: ${stack.slice(stack.indexOf(next)).concat(next).map(label).join(' → ')}`);
      else if (c === undefined) visit(next);
    }
    stack.pop();
    colour.set(node, 'black');
  };
  for (const node of graph.keys()) if (!colour.has(node)) visit(node);
}
findCycles(fileGraph, (f) => relative(ROOT, f));
findCycles(unitGraph, (u) => u);

if (process.argv.includes('--graph')) {
  const order = Object.keys(ALLOWED);
  console.log('unit → what its sources import (allowed by the table)');
  for (const unit of order) {
    const used = [...(runtimeUnitGraph.get(unit) ?? [])].sort((a, b) => order.indexOf(a) - order.indexOf(b));
    console.log(`  ${unit.padEnd(9)} → ${used.length === 0 ? '(nothing)' : used.join(', ')}`);
  }
}
if (problems.length > 0) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log(`imports ok: ${files.length} files in ${unitGraph.size} units, no cycles`);
