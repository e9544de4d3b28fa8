/**
 * The floor of the protocol path: a minimal CDP client that takes one heap
 * snapshot and discards the chunks unread (no parse, no decode, no storage).
 * Nothing that reads the snapshot over CDP can finish sooner; the throughput
 * bench compares our end-to-end capture against it. Run in its own process,
 * like our capturer. Prints {"wallMs", "generateMs", "tailMs", "frameBytes", "frames", "cpuMs"}:
 * wallMs from before endpoint discovery to the takeHeapSnapshot response (our
 * phase clock's connect … sink covers the same span, plus the sink's tail).
 *
 * Usage: node --import tsx bench/lib/floor-client.ts node HOST:PORT | ws WS_URL
 */
import { performance } from 'node:perf_hooks';
import { resolveEndpoint } from '@heapcap/capture';
import { WebSocket } from './frames.ts';

const [kind, where] = process.argv.slice(2);
if ((kind !== 'node' && kind !== 'ws') || where === undefined) throw new Error('usage: floor-client.ts node HOST:PORT | ws WS_URL');

const cpu0 = process.cpuUsage();
const t0 = performance.now();
const url = kind === 'ws' ? where : (await resolveEndpoint({ kind: 'node', inspect: where }, { timeoutMs: 10_000 })).wsUrl;
const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 });
await new Promise((resolve, reject) => {
  ws.once('open', resolve);
  ws.once('error', reject);
});
let firstChunkAt: number | undefined;
let lastChunkAt: number | undefined;
let frameBytes = 0;
let frames = 0;
// Responses are the only messages that start with {"id":; the snapshot's is id 2.
const done = new Promise<void>((resolve) => {
  ws.on('message', (data) => {
    if (data.length > 64 * 1024 || data.toString('latin1', 0, 20).startsWith('{"method":"HeapProfiler.addHeapSnapshotChunk"')) {
      firstChunkAt ??= performance.now();
      lastChunkAt = performance.now();
      frameBytes += data.length;
      frames += 1;
    } else if (data.toString('latin1', 0, 7) === '{"id":2') {
      resolve();
    }
  });
});
ws.send(JSON.stringify({ id: 1, method: 'HeapProfiler.enable', params: {} }));
ws.send(JSON.stringify({ id: 2, method: 'HeapProfiler.takeHeapSnapshot', params: { reportProgress: false } }));
await done;
const wallMs = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
ws.send(JSON.stringify({ id: 3, method: 'HeapProfiler.disable', params: {} }));
ws.close();
console.log(
  JSON.stringify({
    wallMs: Math.round(wallMs),
    generateMs: firstChunkAt === undefined ? null : Math.round(firstChunkAt - t0),
    tailMs: lastChunkAt === undefined ? null : Math.round(t0 + wallMs - lastChunkAt),
    frameBytes,
    frames,
    cpuMs: Math.round((cpu.user + cpu.system) / 1000),
  }),
);
