/**
 * Redis bytes per capture record and per schedule, and that the janitor
 * brings records back to zero once their artifacts and TTL are gone.
 *
 *   node --import tsx bench/run.ts redis-footprint
 *
 * Real Redis (the test kit's, no persistence). Records are made the way the
 * service makes them (requestCapture from a schedule → start → succeed with a
 * realistic timings/artifact record; a tenth fail), without running captures.
 * Bytes are `MEMORY USAGE key SAMPLES 0` for one key and `used_memory` deltas
 * for everything a record or schedule adds (the record hash, its five index
 * entries; the definition, last turn, BullMQ job scheduler and its delayed job).
 * BullMQ's own capture jobs are measured apart: BullMQ bounds them itself
 * (removeOnComplete: 24 h, at most 10,000).
 */
import { Checks, printTable, type Check } from './lib/report.ts';
import { createTestWorld, startRedis } from '@heapcap/testkit';
import { type HeapcapQueue } from '@heapcap/state';
import { type Schedule } from '@heapcap/state/schedules';
import { Janitor } from '@heapcap/state/retention';
import { siblingOf } from '@heapcap/storage';

const RECORDS = 2_000;
const SCHEDULES = 200;
const DAY = 86_400_000;

async function usedMemory(q: HeapcapQueue): Promise<number> {
  const info = await q.redis.info('memory');
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1]);
}

async function memoryUsage(q: HeapcapQueue, key: string): Promise<number> {
  return Number(await q.redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
}

function schedule(id: string): Schedule {
  const now = new Date().toISOString();
  return {
    id,
    selector: { service: 'checkout', env: 'prod' },
    every: '30m',
    everyMs: 1_800_000,
    options: { warm: 'auto', gc: false, gzip: true, exposeInternals: false, captureNumericValue: false, forceHeadroom: false, kind: 'snapshot', samplingSeconds: 30, samplingIntervalBytes: 32_768 },
    retention: { keepLast: 48 },
    maxConcurrent: 1,
    enabled: true,
    reason: 'leak hunt: compare snapshots across the day',
    owner: 'oncall-runbook',
    createdAt: now,
    updatedAt: now,
  };
}

/** Bytes per record and per schedule; the janitor's record expiry empties Redis of records. */
export async function redisFootprintBench(): Promise<Check[]> {
  const checks = new Checks('redis-footprint');
  const redis = await startRedis();
  const world = await createTestWorld(redis.url);
  try {
    const q = world.queue;
    await q.targets.put({ id: 'checkout-7f9c4d-x2k8q', kind: 'node', inspect: '10.0.12.34:9229', labels: { service: 'checkout', env: 'prod', owner: 'payments' } });
    await q.schedules.put({ ...schedule('fp'), enabled: false });
    const before = await usedMemory(q);
    const ids: string[] = [];
    for (let i = 0; i < RECORDS; i++) {
      const { record } = await q.requestCapture({ targetId: 'checkout-7f9c4d-x2k8q', trigger: { kind: 'schedule', who: 'oncall-runbook', scheduleId: 'fp', reason: 'leak hunt: compare snapshots across the day' }, force: true });
      const started = await q.attempts.start(record.id, record.targetId);
      if (!started.ok) throw new Error('start failed');
      if (i % 10 === 9) {
        await q.attempts.fail(record.id, record.targetId, started.attempts, { code: 'target_unreachable', message: 'connect ECONNREFUSED 10.0.12.34:9229', hint: 'is the target running with --inspect?', phase: 'connect' }, { connect: 3001.2, total: 3001.2 }, false);
      } else {
        const timings = { queued: 12.4, connect: 41.3, preflight: 38.9, warm: 412.7, gc: 0.8, generate: 5120.6, serialize: 2210.4, sink: 88.1, total: 7912.8 };
        const key = `checkout-7f9c4d-x2k8q/2026/11/23/${record.id}.heapsnapshot.gz`;
        await q.attempts.succeed(record.id, record.targetId, started.attempts, timings, {
          key,
          manifestKey: siblingOf(key, 'manifest'),
          location: `s3://heapcap-captures/prod/${key}`,
          bytesUncompressed: 184_467_213,
          bytesStored: 31_208_991,
          sha256: 'c2d7424595acef80c2d7424595acef80c2d7424595acef80c2d7424595acef80',
          gzip: true,
        });
      }
      ids.push(record.id);
    }
    const withJobs = await usedMemory(q);
    // BullMQ's capture jobs are a separate cost (a finished job is kept 24 h, at most 10,000 of them): measured apart.
    await q.bull.obliterate({ force: true });
    const afterRecords = await usedMemory(q);
    const perRecord = (afterRecords - before) / RECORDS;
    const perJob = (withJobs - afterRecords) / RECORDS;
    const succeededHash = await memoryUsage(q, q.keys.record(ids[0]!));
    const failedHash = await memoryUsage(q, q.keys.record(ids[9]!));

    // Expire the oldest artifacts the way retention does (keepLast 48 of this schedule).
    await q.schedules.put({ ...schedule('fp'), enabled: false });
    const janitor = new Janitor({ queue: q, store: { remove: async () => undefined }, log: { info: () => undefined, warn: () => undefined }, defaults: { keepLast: 48, maxAgeDays: 0, recordTtlMs: 7 * DAY } });
    // At most 500 deletions a run: run until it has nothing left to do.
    while ((await janitor.run()).deleted.length > 0);
    const expiredHash = await memoryUsage(q, q.keys.record(ids[0]!));

    const s0 = await usedMemory(q);
    for (let i = 0; i < SCHEDULES; i++) {
      const id = `checkout-every-30m-${i}`;
      await q.schedules.put(schedule(id));
      await q.schedules.recordTurn(id, { at: new Date().toISOString(), runAt: new Date().toISOString(), targetId: 'checkout-7f9c4d-x2k8q', outcome: 'created', coalesced: false, captureId: ids[i]! });
    }
    const perSchedule = (await usedMemory(q) - s0) / SCHEDULES;

    // Past the TTL (7 d) every record without an artifact goes; past maxAge (30 d) every artifact, then its record.
    const ttl = await janitor.run(Date.now() + 8 * DAY);
    const ages = new Janitor({ queue: q, store: { remove: async () => undefined }, log: { info: () => undefined, warn: () => undefined }, defaults: { keepLast: 48, maxAgeDays: 30, recordTtlMs: 7 * DAY } });
    for (const s of await q.schedules.list()) await q.schedules.remove(s.id);
    await ages.run(Date.now() + 31 * DAY);
    await ages.run(Date.now() + 38 * DAY);
    const left = (await q.redis.keys(`${q.keys.base}:rec:*`)).length;
    const indexLeft = await q.redis.zcard(q.keys.indexAll());

    printTable(
      ['what', 'bytes'],
      [
        ['record + its 5 index entries (used_memory / record)', perRecord.toFixed(0)],
        ['succeeded record hash (MEMORY USAGE)', String(succeededHash)],
        ['failed record hash', String(failedHash)],
        ['expired record hash', String(expiredHash)],
        ['BullMQ capture job (kept 24 h / 10,000 after it ends)', perJob.toFixed(0)],
        ['schedule: definition + last turn + BullMQ scheduler + next job', perSchedule.toFixed(0)],
      ],
    );
    const steady = 48 + 48 * 7;
    console.log(`every 30 min, keepLast 48, record TTL 7 d (the defaults): ~${steady} records per target (48 with artifacts + 7 d of expired ones) ≈ ${((steady * perRecord) / 1e6).toFixed(1)} MB of Redis`);
    checks.expect(perRecord < 4_096, 'a record with its index entries stays under 4 KiB', `${perRecord.toFixed(0)} B`);
    checks.expect(perSchedule < 8_192, 'a schedule (definition, state, scheduler, next job) stays under 8 KiB', `${perSchedule.toFixed(0)} B`);
    checks.expect(ttl.recordsDeleted === RECORDS / 10 + (RECORDS - RECORDS / 10 - 48), 'past the TTL, every record without an artifact is deleted', `${ttl.recordsDeleted} deleted`);
    checks.expect(left === 0 && indexLeft === 0, 'past maxAge + TTL no record and no index entry is left', `${left} records, ${indexLeft} index entries`);
  } finally {
    await world.cleanup();
    await redis.stop();
  }
  return checks.list;
}
