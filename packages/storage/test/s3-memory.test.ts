/**
 * The sink's memory stays bounded by (queueSize + 1) × partSize however large
 * the snapshot is: 160 MiB go through while at most 26 MiB of buffers may be
 * live (5 part buffers of 5 MiB, reused, and 1 MiB of stream buffers).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { startMinio } from '@heapcap/testkit';
import { createS3Sink } from '../src/s3/sink.ts';
import { testRef } from './s3-fixtures.ts';

const MiB = 1024 * 1024;

// Live bytes, not garbage: finished parts stay in `arrayBuffers` until V8
// collects them (48–78 MiB readings here without forced GC), so each sample
// runs a full GC first. The flag can be set at run time; `gc` then exists in
// contexts created afterwards.
setFlagsFromString('--expose-gc');
// V8 frees ArrayBuffer backing stores on a background thread after a GC, so
// right after gc() `arrayBuffers` still counts some dead parts (a heap snapshot
// taken at a 40 MiB reading showed 20 MiB of live parts). Sweep synchronously.
setFlagsFromString('--no-concurrent-array-buffer-sweeping');
const gc = runInNewContext('gc') as () => void;

void test('160 MiB upload holds at most (queueSize + 1) × partSize of live buffers', async () => {
  const minio = await startMinio();
  const partSizeBytes = 5 * MiB;
  const queueSize = 4;
  const sink = createS3Sink({
    bucket: 'heapcap-memory',
    endpoint: minio.endpoint,
    credentials: { accessKeyId: minio.accessKey, secretAccessKey: minio.secretKey },
    partSizeBytes,
    queueSize,
  });
  try {
    await minio.createBucket('heapcap-memory');
    // One 64 KiB block emitted 2560 times (160 MiB): the source holds 64 KiB, so
    // what grows is what the sink (digest, chunker, parts, HTTP) holds.
    const chunk = 64 * 1024;
    const block = randomBytes(chunk);
    const total = 160;
    const source = Readable.from(
      (function* () {
        for (let i = 0; i < (total * MiB) / chunk; i++) yield block;
      })(),
    );
    gc();
    const baseline = process.memoryUsage().arrayBuffers;
    let peak = baseline;
    const sampler = setInterval(() => {
      gc();
      peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    }, 3);
    const t0 = performance.now();
    let stored;
    try {
      stored = await sink.put(testRef(false), source);
    } finally {
      clearInterval(sampler);
    }
    const ms = performance.now() - t0;
    const grew = (peak - baseline) / MiB;
    // queueSize parts uploading and one filling; + 1 MiB for the stages' stream buffers.
    const bound = ((queueSize + 1) * partSizeBytes) / MiB + 1;
    console.log(
      `${total} MiB in ${ms.toFixed(0)} ms (${((total / ms) * 1000).toFixed(0)} MiB/s); live buffers grew by ${grew.toFixed(1)} MiB (bound ${bound} MiB)`,
    );
    assert.equal(stored.bytesStored, total * MiB);
    assert.ok(grew <= bound, `buffers grew ${grew.toFixed(1)} MiB > bound ${bound} MiB`);
  } finally {
    await sink.close();
    await minio.stop();
  }
});
