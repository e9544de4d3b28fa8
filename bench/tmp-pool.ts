import { SnapshotStream } from '@heapcap/capture';
import { SnapshotDigest, createSnapshotGzip } from '@heapcap/storage';
import { SummaryTee } from '@heapcap/analysis';
import { Writable, pipeline } from 'node:stream';
import { openSync, readSync } from 'node:fs';
const file = process.argv[2]!;
const fd = openSync(file, 'r');
const s = new SnapshotStream();
let peakAb = 0;
const sample = setInterval(() => { peakAb = Math.max(peakAb, process.memoryUsage().arrayBuffers); }, 20);
const c0 = process.cpuUsage();
const useTee = process.argv[3] === 'tee';
const stages: NodeJS.ReadWriteStream[] = [s as never, ...(useTee ? [new SummaryTee() as never] : []), new SnapshotDigest() as never, createSnapshotGzip() as never, new Writable({ write(_c, _e, cb) { cb(); } }) as never];
const done = new Promise<void>((res, rej) => pipeline(stages as never, (err: unknown) => (err ? rej(err) : res())));
const buf = Buffer.allocUnsafe(65536);
let pos = 0;
await new Promise<void>((res) => {
  const tick = (): void => {
    for (let k = 0; k < 16; k++) {
      const n = readSync(fd, buf, 0, buf.length, pos);
      if (n === 0) { s.finish(); res(); return; }
      pos += n;
      s.pushChunk(buf.subarray(0, n));
    }
    setTimeout(tick, 5);
  };
  tick();
});
await done;
clearInterval(sample);
const c = process.cpuUsage(c0);
console.log({ blocks: s.blocksAllocated, stats: s.stats, peakAbMb: (peakAb / 1048576).toFixed(1), cpuMs: (c.user + c.system) / 1000 });
