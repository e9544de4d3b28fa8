/**
 * Where a capturer's memory went: VmHWM right after start-up (the tsx loader
 * and the modules, before any snapshot byte), and the peaks of the V8 heap and
 * of Buffer memory (arrayBuffers) sampled every 100 ms during the capture.
 */
import { peakRssKb } from '@heapcap/testkit';

/** Memory facts of this process, in KiB. */
export interface MemFacts {
  peakRssKb: number;
  startRssKb: number;
  peakHeapUsedKb: number;
  peakArrayBuffersKb: number;
}

/** Start sampling; `stop()` returns the facts. */
export function watchMemory(): { stop(): MemFacts } {
  const startRssKb = peakRssKb(process.pid);
  let heap = 0;
  let buffers = 0;
  const sample = (): void => {
    const m = process.memoryUsage();
    heap = Math.max(heap, m.heapUsed);
    buffers = Math.max(buffers, m.arrayBuffers);
  };
  const timer = setInterval(sample, 100);
  return {
    stop(): MemFacts {
      clearInterval(timer);
      sample();
      return { peakRssKb: peakRssKb(process.pid), startRssKb, peakHeapUsedKb: Math.round(heap / 1024), peakArrayBuffersKb: Math.round(buffers / 1024) };
    },
  };
}
