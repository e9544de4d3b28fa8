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
import { cpSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(ROOT, 'dist');
// `--out DIR`: build into DIR and leave dist/ alone (scripts/pack-npm.mjs: a bundle of its own, not a copy of a
// dist/ another build may be swapping at that moment).
const { values: args } = parseArgs({ options: { out: { type: 'string' } } });
// Else built beside dist/ and moved in file by file at the end (see below).
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
  // Paths in the output (its comments, hence the chunks' content hashes, hence their names) are relative to this:
  // without it they followed the cwd of whoever ran the build (bin/heapcap builds from the user's directory), so
  // two builds of the same sources named their chunks differently, and the second removed the chunks a command
  // started from the first was about to load (ERR_MODULE_NOT_FOUND in CI).
  absWorkingDir: ROOT,
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
// Into dist/ one file at a time, each by rename (atomic), the entries last: at every moment each path in dist/ is a
// whole file, so a command starting (or loading a chunk lazily) while another build runs never finds one missing
// (swapping the directory left an instant with no dist/ at all). Chunk names are hashes of their content
// (absWorkingDir above): a file replaced by an identical build keeps its name and bytes.
const built = filesUnder(OUT);
const entries = new Set(['heapcap.mjs', 'fifo-reader-thread.mjs']);
for (const rel of [...built.filter((f) => !entries.has(f)), ...built.filter((f) => entries.has(f))]) {
  mkdirSync(dirname(join(DIST, rel)), { recursive: true });
  renameSync(join(OUT, rel), join(DIST, rel));
}
// What an older build left and this one does not carry.
const keep = new Set(built);
for (const rel of filesUnder(DIST)) if (!keep.has(rel)) rmSync(join(DIST, rel), { force: true });
rmSync(OUT, { recursive: true, force: true });
console.log('built dist/heapcap.mjs and dist/fifo-reader-thread.mjs');

/** Every file under `dir`, as paths relative to it ([] when it does not exist). */
function filesUnder(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => relative(dir, join(d.parentPath ?? d.path, d.name)));
}
