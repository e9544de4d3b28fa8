/**
 * The pipe transport's reading thread (a worker_threads Worker started by
 * openFifoReader in pipe-transport.ts). It owns the FIFO's read end: libuv's
 * pipe handle on its own event loop reads 64 KiB at a time into one buffer and
 * copies the bytes into 1 MiB blocks, which it transfers (not copies) to the
 * main thread as they fill; the main thread transfers each block back once
 * `onBytes` has copied it. The first read goes over at once, so the main
 * thread sees the first byte when it comes. With every block out, it stops
 * reading (the target then waits, as it would with nobody reading) until one
 * comes back.
 *
 * Why a thread: a Linux FIFO holds 64 KiB, under a millisecond of a target
 * serializing at ~100 MB/s. Read on the main thread, the FIFO stayed full
 * whenever that thread hashed, summarized or gzipped a block (a few ms per
 * MiB), and the target's writeHeapSnapshot() sat blocked in write(): 1.8-2.0 s
 * of a 525 MB capture whose target CPU was the same as in-process.
 *
 * Its own module, importing nothing but Node's: scripts/build.mjs bundles it as
 * dist/fifo-reader-thread.mjs beside the command's chunks; from the sources the
 * thread loads it through tsx (pipe-transport.ts, readerThread).
 */
import { Socket, type ConnectOpts, type SocketConstructorOpts } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';

/** What the thread is started with. */
export interface ReaderData {
  /** The FIFO's read end, opened non-blocking; the thread's pipe handle closes it. */
  fd: number;
  blockBytes: number;
  blocks: number;
  /** Bytes per read: a FIFO never returns more than it holds. */
  readBytes: number;
  /** Shared counters: [0] how often the thread stopped with every block out. */
  stats: Int32Array;
}

/** Thread → main thread. */
export type ReaderMessage = { kind: 'bytes'; block: ArrayBuffer; length: number } | { kind: 'end' } | { kind: 'error'; message: string; code?: string };

/** Main thread → thread: a block given back, or stop. */
export type ReaderCommand = { kind: 'block'; block: ArrayBuffer } | { kind: 'stop' };

if (parentPort === null) throw new Error('fifo-reader-thread.ts runs as a worker thread (openFifoReader starts it)');
const port = parentPort;
const { fd, blockBytes, blocks, readBytes, stats } = workerData as ReaderData;

const free: ArrayBuffer[] = [];
for (let i = 0; i < blocks; i++) free.push(new ArrayBuffer(blockBytes));
let block: ArrayBuffer | undefined;
let used = 0;
let sentFirst = false;
let paused = false;

const post = (m: ReaderMessage, transfer: ArrayBuffer[] = []): void => port.postMessage(m, transfer);

const send = (): void => {
  if (block === undefined || used === 0) return;
  post({ kind: 'bytes', block, length: used }, [block]);
  block = undefined;
  used = 0;
};

const onread = {
  buffer: Buffer.allocUnsafeSlow(readBytes),
  callback(n: number, buf: Uint8Array): boolean {
    for (let at = 0; at < n; ) {
      if (block === undefined) {
        block = free.pop();
        // Cannot happen: reading stops (below) before a read could find no block free.
        if (block === undefined) throw new Error('the FIFO reading thread read with no block free');
      }
      const take = Math.min(n - at, blockBytes - used);
      new Uint8Array(block, used, take).set(buf.subarray(at, at + take));
      used += take;
      at += take;
      if (used === blockBytes || !sentFirst) {
        sentFirst = true;
        send();
      }
    }
    // The next read may need a fresh block: stop while none is left.
    if (free.length === 0 && (block === undefined || blockBytes - used < readBytes)) {
      paused = true;
      Atomics.add(stats, 0, 1);
      return false;
    }
    return true;
  },
};
// `onread` is accepted by the Socket constructor too (Node ≥ 12), though @types/node lists it for connect() only.
const options: SocketConstructorOpts & Pick<ConnectOpts, 'onread'> = { fd, readable: true, writable: false, onread };
const socket = new Socket(options);

socket.on('end', () => {
  send();
  post({ kind: 'end' });
  socket.destroy();
  port.close();
});
socket.on('error', (err: NodeJS.ErrnoException) => {
  post({ kind: 'error', message: err.message, code: err.code });
  socket.destroy();
  port.close();
});
port.on('message', (m: ReaderCommand) => {
  if (m.kind === 'block') {
    free.push(m.block);
    if (paused) {
      paused = false;
      socket.resume();
    }
  } else {
    socket.destroy();
    port.close();
  }
});
