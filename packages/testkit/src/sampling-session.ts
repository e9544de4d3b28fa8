/**
 * A test's own sampling session on a target: `HeapProfiler.startSampling`,
 * then `getSamplingProfile` as often as the test likes (the profile of the
 * sampled allocations still alive, sampling going on), then `stopSampling`.
 * What heapcap's continuous profiles do, over a bare WebSocket so analysis
 * tests get real profiles from real targets without the capture engine.
 */
import WebSocket from 'ws';

/** An open sampling session; `close` stops the sampler and closes the socket (idempotent). */
export interface SamplingSession {
  profile(): Promise<unknown>;
  /** Runtime.evaluate in the target (a page's code to run while sampling); resolves when it has run. */
  evaluate(expression: string): Promise<void>;
  close(): Promise<void>;
}

/** Starts sampling in the target behind `wsUrl` (every `intervalBytes` on average). */
export async function startSamplingSession(wsUrl: string, intervalBytes: number, timeoutMs = 30_000): Promise<SamplingSession> {
  const ws = new WebSocket(wsUrl, { perMessageDeflate: false, maxPayload: 512 * 1024 * 1024 });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  let nextId = 0;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  ws.on('message', (data: Buffer) => {
    const reply = JSON.parse(data.toString()) as { id?: number; result?: unknown; error?: { message: string } };
    const p = reply.id === undefined ? undefined : pending.get(reply.id);
    if (p === undefined || reply.id === undefined) return;
    pending.delete(reply.id);
    if (reply.error !== undefined) p.reject(new Error(reply.error.message));
    else p.resolve(reply.result);
  });
  ws.on('close', () => {
    for (const p of pending.values()) p.reject(new Error('the inspector socket closed'));
    pending.clear();
  });
  const send = async (method: string, params?: object): Promise<unknown> => {
    const id = ++nextId;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await new Promise<unknown>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        timer = setTimeout(() => reject(new Error(`no answer to ${method} within ${timeoutMs} ms`)), timeoutMs);
        ws.send(JSON.stringify({ id, method, params }));
      });
    } finally {
      clearTimeout(timer);
      pending.delete(id);
    }
  };
  await send('HeapProfiler.enable');
  await send('HeapProfiler.startSampling', { samplingInterval: intervalBytes });
  let closed = false;
  return {
    profile: async () => ((await send('HeapProfiler.getSamplingProfile')) as { profile: unknown }).profile,
    async evaluate(expression) {
      const r = (await send('Runtime.evaluate', { expression, awaitPromise: true })) as { exceptionDetails?: { text: string } };
      if (r.exceptionDetails !== undefined) throw new Error(`${expression} threw: ${r.exceptionDetails.text}`);
    },
    async close() {
      if (closed) return;
      closed = true;
      try {
        await send('HeapProfiler.stopSampling');
      } finally {
        ws.terminate();
      }
    },
  };
}
