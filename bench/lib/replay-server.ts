/**
 * A stand-in inspector that replays recorded chunk frames (lib/frames.ts) at
 * a target's pace: every command is answered with `{}`, and
 * `HeapProfiler.takeHeapSnapshot` first gets every recorded chunk frame, sent
 * at RATE MB/s of frames (what a target serializes at; 0 = as fast as the
 * socket takes them). Prints its ws:// URL on the first line of stdout, then
 * serves until killed.
 *
 * Usage: node --import tsx bench/lib/replay-server.ts FRAMES_FILE RATE_MB_PER_S
 */
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadChunkFrames } from './frames.ts';

interface ServerSocket {
  on(event: 'message', listener: (data: Buffer) => void): void;
  send(data: Buffer | string, options?: { binary: boolean }): void;
  readonly bufferedAmount: number;
}
interface Server {
  on(event: 'connection', listener: (ws: ServerSocket) => void): void;
  once(event: 'listening', listener: () => void): void;
  address(): { port: number };
}
type ServerCtor = new (options: { host: string; port: number }) => Server;
const { WebSocketServer } = createRequire(new URL('../../packages/capture/package.json', import.meta.url))('ws') as { WebSocketServer: ServerCtor };

const [file, rateArg] = process.argv.slice(2);
if (file === undefined) throw new Error('usage: replay-server.ts FRAMES_FILE RATE_MB_PER_S');
const rate = Number(rateArg ?? 100) * 1e6;
const frames = loadChunkFrames(file);

const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
server.once('listening', () => console.log(`ws://127.0.0.1:${server.address().port}/replay`));
server.on('connection', (ws) => {
  ws.on('message', (data) => {
    const { id, method } = JSON.parse(data.toString('utf8')) as { id: number; method: string };
    void (async () => {
      if (method === 'HeapProfiler.takeHeapSnapshot') {
        const t0 = performance.now();
        let sent = 0;
        for (const frame of frames) {
          ws.send(frame, { binary: false });
          sent += frame.length;
          const ahead = rate > 0 ? t0 + (sent / rate) * 1000 - performance.now() : 0;
          if (ahead > 2) await sleep(ahead);
          else if (ws.bufferedAmount > 8 * 1024 * 1024) await sleep(1);
        }
      }
      ws.send(JSON.stringify({ id, result: {} }));
    })();
  });
});
