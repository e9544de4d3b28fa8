/**
 * The summarizer in a worker thread, for the summary bench: chunks arrive as
 * messages (copied by postMessage) and are acknowledged one by one (the
 * sender's flow control), `null` ends the snapshot and the summary (or the
 * error) is posted back.
 */
import { parentPort } from 'node:worker_threads';
import { createSummarizer } from '@heapcap/analysis';

const port = parentPort;
if (port === null) throw new Error('summary-worker.ts runs as a worker thread');
const summarizer = createSummarizer();
port.on('message', (chunk: Uint8Array | null) => {
  try {
    if (chunk === null) {
      port.postMessage({ summary: summarizer.end() });
      port.close();
    } else {
      summarizer.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      port.postMessage({ ack: true });
    }
  } catch (err) {
    port.postMessage({ error: String(err) });
    port.close();
  }
});
