/**
 * Starts one of heapcap's own worker threads (the pipe transport's FIFO
 * reader, the redaction thread) from its module. In the bundle
 * (scripts/build.mjs defines HEAPCAP_BUNDLED) the module is `dist/<name>.mjs`,
 * beside every chunk, a separate entry of the build. From the TypeScript
 * sources (tests, benches) a worker does not inherit tsx's loader on Node 20,
 * so the thread loads tsx's require hook itself and then `sourceFile()`
 * (a function: resolving a workspace package fails in the bundle, which has none).
 */
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

declare const HEAPCAP_BUNDLED: boolean | undefined;

/** A thread running `dist/<name>.mjs` (bundled) or `sourceFile()` (sources), with `workerData: data`. */
export function startModuleThread(name: string, sourceFile: () => string, data: unknown, options: Omit<WorkerOptions, 'eval' | 'workerData'> = {}): Worker {
  if (typeof HEAPCAP_BUNDLED !== 'undefined' && HEAPCAP_BUNDLED) return new Worker(new URL(`./${name}.mjs`, import.meta.url), { ...options, workerData: data });
  const tsx = fileURLToPath(import.meta.resolve('tsx/cjs/api'));
  const file = sourceFile();
  return new Worker(`require(${JSON.stringify(tsx)}).require(${JSON.stringify(file)}, ${JSON.stringify(file)});`, { ...options, eval: true, workerData: data });
}
