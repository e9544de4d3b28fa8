// Static checks: TypeScript (strict), ESLint (type-aware), import rules and
// cycles, embedded WebAssembly up to date with its .wat, docs/architecture.md's
// folder map equal to the tree.
import { spawnSync } from 'node:child_process';

const steps = [
  ['typecheck', ['node_modules/typescript/bin/tsc', '--noEmit', '-p', 'tsconfig.json']],
  // The console runs in a browser: its own project (DOM types, Preact's JSX), outside the Node one.
  ['typecheck console', ['node_modules/typescript/bin/tsc', '--noEmit', '-p', 'services/console/src/tsconfig.json']],
  ['lint', ['node_modules/eslint/bin/eslint.js', '--max-warnings=0', 'packages', 'services', 'bench', 'scripts', 'eslint.config.mjs']],
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
