// Fails on import cycles (between files and between workspace packages) and on
// imports the architecture forbids: packages never import services, and the
// low-level packages import only the leaves (errors, config).
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');
/** Which workspace packages each package may import. */
const ALLOWED = {
  errors: [],
  config: ['errors'],
  capture: ['errors', 'config'],
  storage: ['errors', 'config'],
  queue: ['errors', 'config'],
  analysis: ['errors'],
  cli: ['errors', 'config', 'capture', 'storage', 'queue', 'analysis'],
  testkit: ['errors', 'config', 'capture', 'storage', 'queue'],
};

function walk(dir, out = []) {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (/\.(ts|mts)$/.test(name) && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const files = [...walk(join(ROOT, 'packages')), ...walk(join(ROOT, 'services'))];
const importRe = /(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?(?:[^'"]*?\sfrom\s+)?['"]([^'"]+)['"]/g;
const owner = (file) => {
  const [area, name] = relative(ROOT, file).split('/');
  return { area, name };
};
const problems = [];
const graph = new Map();

for (const file of files) {
  const src = readFileSync(file, 'utf8');
  const from = owner(file);
  const edges = [];
  for (const m of src.matchAll(importRe)) {
    const spec = m[1];
    if (/^import\s+type|^export\s+type/.test(m[0].trim())) continue; // type-only imports cannot form runtime cycles
    let target;
    if (spec.startsWith('@heapcap/')) {
      // `@heapcap/storage/file` is the subpath export packages/storage/src/file.ts.
      const [pkg, sub] = spec.slice('@heapcap/'.length).split('/');
      target = join(ROOT, 'packages', pkg, 'src', `${sub ?? 'index'}.ts`);
      if (from.area === 'packages') {
        // Tests and benches may use the test kit; sources may not.
        const isTest = relative(ROOT, file).split('/').includes('test');
        const allowed = [...(ALLOWED[from.name] ?? []), ...(isTest ? ['testkit'] : [])];
        if (ALLOWED[from.name] !== undefined && pkg !== from.name && !allowed.includes(pkg)) {
          problems.push(`${relative(ROOT, file)}: @heapcap/${from.name} may not import @heapcap/${pkg}`);
        }
      }
    } else if (spec.startsWith('.')) {
      target = resolve(dirname(file), spec);
      if (from.area === 'packages' && relative(ROOT, target).startsWith('services/')) {
        problems.push(`${relative(ROOT, file)}: a package may not import a service (${spec})`);
      }
      const fromPkg = `${from.area}/${from.name}`;
      const toRel = relative(ROOT, target);
      if (!toRel.startsWith(`${fromPkg}/`)) problems.push(`${relative(ROOT, file)}: relative import leaves its package (${spec}); import @heapcap/… instead`);
    } else continue;
    if (existsSync(target)) edges.push(target);
  }
  graph.set(file, edges);
}

// Tarjan-free cycle search: DFS with colours.
const colour = new Map();
const stack = [];
function visit(node) {
  colour.set(node, 'grey');
  stack.push(node);
  for (const next of graph.get(node) ?? []) {
    const c = colour.get(next);
    if (c === 'grey') {
      const cycle = stack.slice(stack.indexOf(next)).concat(next).map((f) => relative(ROOT, f));
      problems.push(`import cycle: ${cycle.join(' → ')}`);
    } else if (c === undefined) visit(next);
  }
  stack.pop();
  colour.set(node, 'black');
}
for (const f of graph.keys()) if (!colour.has(f)) visit(f);

if (problems.length > 0) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log(`imports ok: ${files.length} files, no cycles`);
