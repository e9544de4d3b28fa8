// Static checks: TypeScript (strict), ESLint (type-aware), import rules and
// cycles, embedded WebAssembly up to date with its .wat, docs/architecture.md's
// folder map equal to the tree.
import { spawnSync } from 'node:child_process';

const steps = [
  // tsc and ESLint over the same programs (the Node one; the console's, which runs in a browser: DOM
  // types, Preact's JSX): 67 CPU-s where `tsc` twice and `eslint` took 117.
  ['typecheck + lint', ['scripts/check-program.mjs']],
  ['imports', ['scripts/check-imports.mjs']],
  ['wasm', ['scripts/assemble-wasm.mjs', '--check']],
  ['docs map', ['scripts/check-docs-map.mjs']],
];
for (const [name, args] of steps) {
  const t0 = Date.now();
  const res = spawnSync(process.execPath, args, { stdio: 'inherit' });
  if (res.status !== 0) {
    console.error(`check failed: ${name}`);
    process.exit(res.status ?? 1);
  }
  console.log(`check ok: ${name} (${Date.now() - t0} ms)`);
}
