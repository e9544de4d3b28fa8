/**
 * The `heapcap` command itself (bin/heapcap: the bundle on plain node) as a
 * capturer for the RSS bench. Runs it as a child and polls its VmHWM until it
 * exits (VmHWM only grows, so the last reading is its peak, give or take one
 * 20 ms poll). Prints the same JSON facts as rss-ours.ts.
 *
 * Usage: node --import tsx bench/lib/rss-cli.ts HOST:PORT DIR|s3://BUCKET/PREFIX [gzip|no-gzip|gzip-cdp] [S3_ENDPOINT]
 * (S3 credentials from the environment, AWS_ACCESS_KEY_ID and so on.)
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const [inspect, dir, compression = 'gzip', s3Endpoint] = process.argv.slice(2);
if (inspect === undefined || dir === undefined) throw new Error('usage: rss-cli.ts HOST:PORT DIR|s3://BUCKET/PREFIX [gzip|no-gzip|gzip-cdp] [S3_ENDPOINT]');
const bin = fileURLToPath(new URL('../../bin/heapcap', import.meta.url));

const args = [
  'capture',
  '--node',
  inspect,
  '--out',
  dir,
  '--json',
  '--quiet',
  ...(compression === 'no-gzip' ? ['--no-gzip'] : []),
  // Over CDP, as a remote target or a browser is captured (locally the pipe is the default).
  ...(compression === 'gzip-cdp' ? ['--transport', 'cdp'] : []),
  ...(s3Endpoint === undefined ? [] : ['--s3-endpoint', s3Endpoint]),
];
const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'inherit'] });
let out = '';
child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));

let peakKb = 0;
const poll = setInterval(() => {
  // bin/heapcap execs node, so the pid is node's once the exec happened.
  readFile(`/proc/${child.pid}/status`, 'utf8').then(
    (s) => {
      const kb = Number(/VmHWM:\s+(\d+)/.exec(s)?.[1] ?? 0);
      if (kb > peakKb) peakKb = kb;
    },
    () => undefined,
  );
}, 20);
const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
clearInterval(poll);
if (code !== 0) throw new Error(`heapcap exited with ${code}`);
const manifest = JSON.parse(out) as {
  artifact: { bytesUncompressed: number; bytesStored: number };
  timings: Record<string, number> & { total: number };
  stream: { spilledBytes: number; peakMemoryBytes: number };
};
console.log(
  JSON.stringify({
    peakRssKb: peakKb,
    bytes: manifest.artifact.bytesUncompressed,
    storedBytes: manifest.artifact.bytesStored,
    ms: Math.round(manifest.timings.total),
    spilledBytes: manifest.stream.spilledBytes,
    peakBufferBytes: manifest.stream.peakMemoryBytes,
    timings: manifest.timings,
  }),
);
