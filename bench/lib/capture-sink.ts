/**
 * One capture through the pipeline (engine → store → manifest) into a
 * storage URL, in its own process so its peak RSS (VmHWM) is the capturer's
 * alone. S3 credentials come from the AWS chain (AWS_ACCESS_KEY_ID, …).
 * Prints {"peakRssKb", "startRssKb", "wallMs", "cpuMs", "timings", "bytes", "storedBytes", "spilledBytes", "location"}:
 * startRssKb is the process before the capture (Node + tsx + the SDK loaded), cpuMs its
 * CPU time (all threads: gzip runs on the libuv pool) during the capture.
 *
 * Usage: node --import tsx bench/lib/capture-sink.ts HOST:PORT file://DIR|s3://BUCKET/PREFIX [S3_ENDPOINT]
 */
import { performance } from 'node:perf_hooks';
import { newCaptureId, parseStorageUrl } from '@heapcap/config';
import { runCapture } from '@heapcap/pipeline';
import { createStore } from '@heapcap/storage';
import { peakRssKb, rssKb } from '@heapcap/testkit';

const [inspect, url, endpoint] = process.argv.slice(2);
if (inspect === undefined || url === undefined) throw new Error('usage: capture-sink.ts HOST:PORT STORAGE_URL [S3_ENDPOINT]');

const sink = createStore(parseStorageUrl(url, { endpoint }));
const startRssKb = rssKb(process.pid);
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const out = await runCapture({
  kind: 'snapshot',
  ids: { captureId: newCaptureId(), targetId: 'bench' },
  store: sink,
  gzip: true,
  capture: { endpoint: { kind: 'node', inspect }, warm: 'auto', gc: false },
});
const wallMs = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
// Releases the S3 client's keep-alive sockets so the process exits at once.
await sink.close();
console.log(
  JSON.stringify({
    peakRssKb: peakRssKb(process.pid),
    startRssKb,
    wallMs: Math.round(wallMs),
    cpuMs: Math.round((cpu.user + cpu.system) / 1000),
    timings: out.manifest.timings,
    bytes: out.stored.bytesUncompressed,
    storedBytes: out.stored.bytesStored,
    spilledBytes: out.manifest.stream.spilledBytes,
    location: out.stored.location,
  }),
);
