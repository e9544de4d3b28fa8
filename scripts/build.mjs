// Bundles the `heapcap` command into dist/heapcap.mjs, dependencies included
// (pnpm does not hoist them where a root-level bundle could find them). Running the
// bundle with plain `node` avoids tsx's loader thread (~50 MB of RSS), which
// matters on a host whose process is already short of memory.
import { build } from 'esbuild';

// ws's optional native speed-ups; it falls back to JS without them.
const optionalNative = new Set(['bufferutil', 'utf-8-validate']);
await build({
  entryPoints: { heapcap: 'packages/cli/src/main.ts' },
  outdir: 'dist',
  outExtension: { '.js': '.mjs' },
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: true,
  banner: { js: "import { createRequire as __heapcapCreateRequire } from 'node:module'; const require = __heapcapCreateRequire(import.meta.url);" },
  plugins: [
    {
      name: 'optional-native',
      setup(b) {
        b.onResolve({ filter: /^[a-z-]+$/ }, (args) => (optionalNative.has(args.path) ? { path: args.path, external: true } : undefined));
      },
    },
  ],
  logLevel: 'warning',
});
console.log('built dist/heapcap.mjs');
