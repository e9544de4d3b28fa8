/**
 * The naive capturer, for the RSS bench: chrome-remote-interface directly,
 * every chunk kept in an array (`chunks.push(chunk)`), written to a file at
 * the end. Run in its own process: prints the memory facts of lib/mem-watch.ts
 * plus {"bytes", "ms"}.
 *
 * Usage: node --import tsx bench/lib/rss-naive.ts HOST:PORT OUT_FILE
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { watchMemory } from './mem-watch.ts';

/** The slice of chrome-remote-interface's client this script uses. */
interface Client {
  send(method: string, params?: object): Promise<unknown>;
  on(event: string, listener: (params: { chunk: string }) => void): unknown;
  close(): Promise<void>;
}
type Connect = (options: { host: string; port: number }) => Promise<Client>;

// The naive client as users write it: chrome-remote-interface's CommonJS entry (a bench dependency), typed by the slice above.
const CDP = createRequire(import.meta.url)('chrome-remote-interface') as Connect;

const [inspect, out] = process.argv.slice(2);
if (inspect === undefined || out === undefined) throw new Error('usage: rss-naive.ts HOST:PORT OUT_FILE');
const [host = '127.0.0.1', port = '9229'] = inspect.split(':');

const mem = watchMemory();
const t0 = performance.now();
const client = await CDP({ host, port: Number(port) });
const chunks: string[] = [];
try {
  client.on('HeapProfiler.addHeapSnapshotChunk', ({ chunk }) => {
    chunks.push(chunk);
  });
  await client.send('HeapProfiler.enable');
  await client.send('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
  await client.send('HeapProfiler.disable');
} finally {
  await client.close();
}
// One write per chunk: joining would throw above V8's ~512 MiB string limit.
let bytes = 0;
const fd = openSync(out, 'w');
try {
  for (const c of chunks) bytes += writeSync(fd, c);
} finally {
  closeSync(fd);
}
console.log(JSON.stringify({ ...mem.stop(), bytes, ms: Math.round(performance.now() - t0) }));
