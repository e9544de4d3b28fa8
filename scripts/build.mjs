// Bundles the `heapcap` command into dist/: one bundle for every command
// (capture, trigger, status, serve, api, worker), dependencies included, so
// dist/ runs on plain `node` without the TypeScript sources or node_modules
// (the Docker image ships dist/ alone). Code splitting keeps the service
// commands' dependencies (Fastify, BullMQ, pino, the AWS SDK) in chunks that
// `heapcap capture` never loads: tsx's loader thread costs ~50 MB of RSS and
// the service stack more, on a host whose process is already short of memory.
// The pipe transport's reading thread is a second entry, dist/fifo-reader-thread.mjs:
// a worker_threads Worker loads a module by URL, and pipe-transport.ts asks for
// it beside its own chunk.
import { build } from 'esbuild';
import { cpSync, existsSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(ROOT, 'dist');
// `--out DIR`: build into DIR and leave dist/ alone (scripts/pack-npm.mjs: a bundle of its own, not a copy of a
// dist/ another build may be swapping at that moment).
const { values: args } = parseArgs({ options: { out: { type: 'string' } } });
// Else built beside dist/ and swapped in at the end: a command already running from dist/ keeps its files.
const OUT = args.out === undefined ? join(ROOT, `.dist-build-${process.pid}`) : resolve(args.out);

// ws's optional native speed-ups; it falls back to JS without them.
const optionalNative = new Set(['bufferutil', 'utf-8-validate']);

rmSync(OUT, { recursive: true, force: true });
await build({
  entryPoints: {
    heapcap: join(ROOT, 'services/serve/src/heapcap.ts'),
    'fifo-reader-thread': join(ROOT, 'packages/capture/src/fifo-reader-thread.ts'),
  },
  outdir: OUT,
  outExtension: { '.js': '.mjs' },
  // Flat: every chunk sits beside heapcap.mjs, so `new URL('./x', import.meta.url)` means dist/x from any of them.
  chunkNames: 'chunk-[hash]',
  bundle: true,
  splitting: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: true,
  // CommonJS dependencies inside an ES module bundle still call require() and read __dirname.
  banner: {
    js: [
      "import { createRequire as __heapcapCreateRequire } from 'node:module';",
      "import { fileURLToPath as __heapcapFileURLToPath } from 'node:url';",
      'const require = __heapcapCreateRequire(import.meta.url);',
      'const __filename = __heapcapFileURLToPath(import.meta.url);',
      "const __dirname = __heapcapFileURLToPath(new URL('.', import.meta.url));",
    ].join(' '),
  },
  define: { HEAPCAP_BUNDLED: 'true' },
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

// Swagger UI's static files (the API serves them at /docs): beside the chunks, where the bundled API looks.
const requireFromApi = createRequire(join(ROOT, 'services/api/package.json'));
const swaggerUi = dirname(requireFromApi.resolve('@fastify/swagger-ui/package.json'));
const assets = join(swaggerUi, 'static');
if (!existsSync(assets)) throw new Error(`Swagger UI assets missing at ${assets}`);
// dist/static: where the bundled plugin's own __dirname-relative reads (its logo) land too.
cpSync(assets, join(OUT, 'static'), { recursive: true });

// The web console (services/console), built by Vite into dist/console: the API serves it at /ui from
// beside its own chunk, so the one bundle (and the image, which copies dist/) carries it.
const requireFromConsole = createRequire(join(ROOT, 'services/console/package.json'));
const vite = await import(pathToFileURL(requireFromConsole.resolve('vite')).href);
await vite.build({
  configFile: join(ROOT, 'services/console/vite.config.mjs'),
  logLevel: 'warn',
  build: { outDir: join(OUT, 'console') },
});

if (args.out !== undefined) {
  console.log(`built ${OUT}/heapcap.mjs and ${OUT}/fifo-reader-thread.mjs`);
  process.exit(0);
}
const old = join(ROOT, `.dist-old-${process.pid}`);
if (existsSync(DIST)) renameSync(DIST, old);
renameSync(OUT, DIST);
rmSync(old, { recursive: true, force: true });
console.log('built dist/heapcap.mjs and dist/fifo-reader-thread.mjs');
