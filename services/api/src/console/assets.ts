/**
 * The console's built files (Vite's output, dist/console/), read into memory
 * once at start-up: a few hundred KB, and a rebuild that swaps dist/ under a
 * running server (scripts/build.mjs renames directories) cannot break pages
 * it is serving.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Set to true by the bundler (scripts/build.mjs); undefined when the sources run through tsx. */
declare const HEAPCAP_BUNDLED: boolean | undefined;

/**
 * Where the built console is: in the bundle, dist/console beside the chunk
 * that holds this code (every chunk sits flat in dist/); from the sources,
 * the checkout's dist/console (built by scripts/build.mjs, e.g. through bin/heapcap).
 */
export function defaultConsoleDir(): string {
  const bundled = typeof HEAPCAP_BUNDLED !== 'undefined' && HEAPCAP_BUNDLED;
  return fileURLToPath(new URL(bundled ? './console/' : '../../../../dist/console/', import.meta.url));
}

/** One file: its bytes, media type and a strong ETag. */
export interface Asset {
  body: Buffer;
  type: string;
  etag: string;
  /** Vite's hashed file names never change content: cache them for a year. index.html is revalidated. */
  immutable: boolean;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.map': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

function typeOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return TYPES[dot < 0 ? '' : name.slice(dot)] ?? 'application/octet-stream';
}

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

/** Every file under `dir` by its URL path relative to it (`index.html`, `assets/index-3f2a.js`); empty when `dir` does not exist. */
export function loadAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  if (!existsSync(join(dir, 'index.html'))) return assets;
  for (const file of walk(dir)) {
    const path = relative(dir, file).split(sep).join('/');
    const body = readFileSync(file);
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    assets.set(path, { body, type: typeOf(path), etag, immutable: path.startsWith('assets/') });
  }
  return assets;
}
