/**
 * Whether a target's V8 sampling heap profiler is running, asked over a
 * session of its own: `HeapProfiler.getSamplingProfile` answers with the
 * profile while any session samples (the profiler is per isolate), and with
 * "V8 sampling heap profiler was not started." otherwise. Needs no enable.
 */
import WebSocket from 'ws';

/** True while sampling runs in the target behind `wsUrl`; rejects after `timeoutMs` (default 10 s). */
export async function samplingProfilerRunning(wsUrl: string, timeoutMs = 10_000): Promise<boolean> {
  const ws = new WebSocket(wsUrl, { perMessageDeflate: false });
  let timer: NodeJS.Timeout | undefined;
  try {
    return await new Promise<boolean>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer to HeapProfiler.getSamplingProfile from ${wsUrl} within ${timeoutMs} ms`)), timeoutMs);
      ws.once('error', reject);
      ws.once('open', () => ws.send(JSON.stringify({ id: 1, method: 'HeapProfiler.getSamplingProfile' })));
      ws.on('message', (data: Buffer) => {
        const reply = JSON.parse(data.toString()) as { id?: number; result?: unknown; error?: { message: string } };
        if (reply.id !== 1) return;
        if (reply.result !== undefined) resolve(true);
        else if (/not started/.test(reply.error?.message ?? '')) resolve(false);
        else reject(new Error(`HeapProfiler.getSamplingProfile failed: ${reply.error?.message ?? JSON.stringify(reply)}`));
      });
    });
  } finally {
    clearTimeout(timer);
    ws.terminate();
  }
}
