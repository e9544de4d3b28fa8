/**
 * Recorded CDP frames: one real snapshot's WebSocket messages, saved once so
 * the capturer's per-byte work can be measured again and again on the same
 * bytes, without a target's own noise. File format: per message a u32 (LE)
 * length, then the message's bytes.
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isChunkFrame } from '@heapcap/capture';

/** The slice of `ws` 8 used here (a dependency of the capture package, not of the workspace root). */
interface Socket {
  on(event: 'message', listener: (data: Buffer) => void): void;
  once(event: 'open' | 'error', listener: (arg?: unknown) => void): void;
  send(data: string): void;
  close(): void;
}
type SocketCtor = new (url: string, options: object) => Socket;
/** `ws` 8, as the engine uses it. */
export const WebSocket = createRequire(new URL('../../packages/capture/package.json', import.meta.url))('ws') as SocketCtor;

/** Takes one snapshot of the target at `wsUrl` and writes every message up to the response into `file`; returns the count. */
export async function recordSnapshotFrames(wsUrl: string, file: string): Promise<number> {
  const ws = new WebSocket(wsUrl, { perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const fd = openSync(file, 'w');
  let count = 0;
  try {
    await new Promise<void>((resolve) => {
      ws.on('message', (data) => {
        const length = Buffer.alloc(4);
        length.writeUInt32LE(data.length);
        writeSync(fd, length);
        writeSync(fd, data);
        count += 1;
        if (data.toString('latin1', 0, 7) === '{"id":2') resolve();
      });
      ws.send(JSON.stringify({ id: 1, method: 'HeapProfiler.enable', params: {} }));
      ws.send(JSON.stringify({ id: 2, method: 'HeapProfiler.takeHeapSnapshot', params: { reportProgress: false } }));
    });
  } finally {
    closeSync(fd);
    ws.close();
  }
  return count;
}

/** The chunk frames of a recording, as views into one Buffer holding the whole file. */
export function loadChunkFrames(file: string): Buffer[] {
  const all = readFileSync(file);
  const frames: Buffer[] = [];
  for (let at = 0; at < all.length; ) {
    const n = all.readUInt32LE(at);
    const frame = all.subarray(at + 4, at + 4 + n);
    at += 4 + n;
    if (isChunkFrame(frame)) frames.push(frame);
  }
  return frames;
}
