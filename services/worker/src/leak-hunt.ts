/**
 * The `leak-hunt` job: baseline, target and final snapshots of one target
 * `interval` apart, all on ONE inspector session with the heap profiler
 * enabled throughout (closing a session or HeapProfiler.disable clears V8's
 * object ids, and the three-snapshot technique matches objects by id), then
 * the report: classes whose instances created between the first two
 * snapshots still live in the third, with retainer paths. A marker object
 * planted before the baseline proves the ids were kept (`snapshot_ids_reset`
 * otherwise: no report), and an optional `drive` exercises the target
 * `rounds` times right after the baseline and once more after the target
 * snapshot (a suspect must grow with the rounds and survive the extra one). The target lock is
 * held for the whole hunt, so no capture interleaves (its session would not
 * clear the ids, but its snapshot would pause the target in between).
 *
 * Each snapshot is taken by the engine's `takeSnapshot`, the path a capture's
 * snapshot takes: listener on before the command, the bounded buffer that
 * spills to a file in the hunt's directory (the socket is never stalled by a
 * slow disk), the completeness check (`snapshot_truncated`), `target_closed`
 * when the target goes away. The report's work is synchronous CPU like the
 * analysis'; that and the three whole snapshots on disk are why hunts run one
 * at a time, with the analysis's size limit per snapshot.
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createRedactor, leakHunt } from '@heapcap/analysis';
import { resolveRedaction, type RedactMode } from '@heapcap/config';
import { CdpSession, resolveEndpoint, sleep, takeSnapshot } from '@heapcap/capture';
import { CaptureError, toCaptureError, type ErrorCode } from '@heapcap/errors';
import { driveUrlProblem, leakHuntQueueName, LeakHuntJobSchema, type HuntDrive, type LeakHuntJob, type LeakHuntRecord, type Target } from '@heapcap/state';
import { JobConsumer, type FollowUpDeps } from './job-consumer.ts';
import { startLease } from './lease.ts';
import { targetToEndpoint } from './target-endpoint.ts';
import { scratchPrefix } from './temp-files.ts';

/** What a hunt needs (the same as the analysis: its size limit applies to each snapshot), and the id the hunt record names. */
export type LeakHuntWorkerDeps = FollowUpDeps & {
  workerId?: string | undefined;
  /** HEAPCAP_REDACT: the hunt's snapshots are redacted before they reach its scratch files when this or the target says `strings`. */
  redact?: RedactMode | undefined;
};

const SNAPSHOT_TIMEOUT_MS = 30 * 60_000;
const LEASE_MS = 30_000;
/** How long a hunt waits for a busy target's lock before failing with `target_busy`. */
const LOCK_WAIT_MS = 120_000;

/**
 * One snapshot on `session` (HeapProfiler enabled) into the new file `path`,
 * through the engine's snapshot path; resolves with its bytes. A failed write
 * (a full disk) is `storage_failed`; the target's failures keep their codes.
 */
async function snapshotTo(session: CdpSession, path: string, dir: string, signal: AbortSignal, redact: RedactMode, stopTracking = false): Promise<{ bytes: number; redactedStrings: number }> {
  // A redactor per snapshot: it rewrites the chunks before the spill file and the scratch file see them.
  const redactor = createRedactor(redact);
  const taken = await takeSnapshot(
    session,
    async (snapshot) => {
      try {
        // 'wx': a fresh file, never one left over.
        await pipeline(snapshot, createWriteStream(path, { mode: 0o600, flags: 'wx' }));
      } catch (err) {
        // The engine's own errors (target_closed, snapshot_truncated, …) reach the file's pipeline too.
        if (err instanceof CaptureError) throw err;
        throw new CaptureError('storage_failed', `writing the snapshot to ${path} failed: ${(err as Error).message}`, {
          hint: 'check free space and permissions of the worker\'s scratch directory (HEAPCAP_SPILL_DIR, default the OS temp dir)',
          cause: err,
        });
      }
    },
    { timeoutMs: SNAPSHOT_TIMEOUT_MS, spillDir: dir, signal, transform: redactor, stopTracking },
  );
  return { bytes: taken.stats.bytes, redactedStrings: redactor?.redaction.redactedStrings ?? 0 };
}

/** The remote object group of the hunt's own objects in the target (released at the end). */
const MARKER_GROUP = 'heapcap-hunt';

/** A marker object planted in the target before the baseline, and the heap profiler id the baseline gave it. */
interface Marker {
  global: string;
  objectId: string;
  /** 0 until the baseline snapshot has numbered it. */
  id: number;
}

/**
 * Plants `globalThis.__heapcapHuntMarker_<huntId>`, an instance of
 * `HeapcapHuntMarker`, held by the global so it lives through the hunt. V8
 * numbers it in the baseline snapshot; from then on the profiler's id map
 * keeps it (a live object keeps its entry, moves included) until the map is
 * cleared. After a clear the map is empty until the next snapshot walks the
 * heap, so HeapProfiler.getHeapObjectId answers 0 for the marker: checked
 * right before each later snapshot, that is a certain sign. While the hunt
 * tracks allocations, V8's 50 ms heap-stats timer walks the heap too, so the
 * marker comes back with a new number instead (seen: @6149, then @316451). The 80 %
 * signature agreement check cannot tell a renumbering that follows the same
 * traversal order (a Chromium hunt whose ids were cleared passed it with
 * 80.0-84.2 %).
 */
async function plantMarker(session: CdpSession, huntId: string): Promise<Marker> {
  const global = `__heapcapHuntMarker_${huntId}`;
  const m = await session.send('Runtime.evaluate', { expression: `globalThis[${JSON.stringify(global)}] = new (class HeapcapHuntMarker {})()`, objectGroup: MARKER_GROUP });
  if (m.result.objectId === undefined) throw new CaptureError('protocol_error', 'the hunt could not plant its marker object in the target');
  return { global, objectId: m.result.objectId, id: 0 };
}

/** The marker's heap profiler id now (0: not in the id map). */
async function markerId(session: CdpSession, marker: Marker): Promise<number> {
  const { heapSnapshotObjectId } = await session.send('HeapProfiler.getHeapObjectId', { objectId: marker.objectId });
  return Number(heapSnapshotObjectId);
}

/**
 * Refuses the hunt (`snapshot_ids_reset`) when the marker's id changed since
 * the baseline: the id map was cleared. Checked before each later snapshot
 * (certain: an emptied map answers 0) and after it (a clear in the moment
 * between the two shows as a new number, unless the renumbering gave the
 * marker its old one).
 */
async function checkMarker(session: CdpSession, marker: Marker, when: string): Promise<void> {
  const now = await markerId(session, marker);
  if (now === marker.id) return;
  const what = now === 0 ? 'is no longer in the id map' : `is now @${now}`;
  throw new CaptureError('snapshot_ids_reset', `the target's heap profiler ids were cleared during the hunt (seen ${when}: the hunt's marker object was @${marker.id} and ${what}); the counts would be wrong, so there is no report`, {
    hint: 'another inspector session closed (DevTools, a debugger, another tool) or HeapProfiler.disable ran during the hunt; keep other inspector clients away from the target and hunt again',
    details: { markerId: marker.id, now },
  });
}

/**
 * Starts V8's allocation tracker right after the baseline snapshot: from then
 * on every new object gets its allocation stack (the target snapshot carries
 * them). `allocations_unsupported` when the target's inspector refuses.
 *
 * How it stops, whatever happens: the target snapshot is taken with
 * `HeapProfiler.stopTrackingHeapObjects`, which streams one whole snapshot
 * (with the trace sections) and then stops (a `takeHeapSnapshot` followed by
 * a stop would make the target pay for two snapshots). Before that, any
 * failure (a cancel, a failed drive, a lost lock) ends in the `finally` that
 * closes the session: V8 disables the session's heap profiler agent when a
 * session goes, and that stops tracking (and clears the ids, which nothing
 * needs any more). A target that is gone tracks nothing. Both checked by
 * asking the target's V8 (leak-hunt-allocations.test.ts).
 * While tracking, V8's inspector also runs a 50 ms timer that sends heap
 * stats, each after a full GC: the cost bench/hunt-tracking.ts measures.
 */
async function startTracking(session: CdpSession): Promise<void> {
  try {
    await session.send('HeapProfiler.startTrackingHeapObjects', { trackAllocations: true });
  } catch (err) {
    const e = toCaptureError(err);
    if (e.code !== 'protocol_error') throw e;
    throw new CaptureError('allocations_unsupported', `the target's inspector refused to track allocations: ${e.message}`, {
      hint: 'hunt again with allocations: false (heapcap hunt start … --no-allocations); the report then has no allocation stacks',
      cause: err,
    });
  }
}

/** Removes the marker and releases the hunt's remote objects; best effort (the target may be gone). */
async function removeMarker(session: CdpSession, marker: Marker | undefined): Promise<void> {
  if (marker !== undefined) await session.send('Runtime.evaluate', { expression: `delete globalThis[${JSON.stringify(marker.global)}]` }, 2_000).catch(() => undefined);
  await session.send('Runtime.releaseObjectGroup', { objectGroup: MARKER_GROUP }, 2_000).catch(() => undefined);
}

/** How long a drive's expression may run, and each of its HTTP requests. */
const DRIVE_STEP_MS = 30_000;
const DRIVE_GROUP = 'heapcap-hunt-drive';

/**
 * Drives the target between the baseline and target snapshots: `evaluate` on
 * the hunt's own session (a second session's close would clear the ids), or
 * the HTTP requests one after the other. The URL's host is
 * checked again here (the API checked it against the registry as it was
 * then); redirects are not followed, so a target cannot send the worker
 * elsewhere. A drive that fails fails the hunt with `invalid_input`.
 */
async function runDrive(drive: HuntDrive, session: CdpSession, target: Target, signal: AbortSignal): Promise<string> {
  if ('evaluate' in drive) {
    // The result stays a remote object in a group of its own, released at once: the inspector would otherwise keep it (and what it holds) alive into the snapshots.
    const res = await session.send('Runtime.evaluate', { expression: drive.evaluate, awaitPromise: true, returnByValue: false, objectGroup: DRIVE_GROUP, timeout: DRIVE_STEP_MS }, DRIVE_STEP_MS + 5_000);
    await session.send('Runtime.releaseObjectGroup', { objectGroup: DRIVE_GROUP });
    if (res.exceptionDetails !== undefined) {
      const why = res.exceptionDetails.exception?.description ?? res.exceptionDetails.text;
      throw new CaptureError('invalid_input', `the hunt's drive expression threw: ${why.split('\n')[0] ?? why}`, { hint: 'fix drive.evaluate; it runs in the target after the baseline snapshot, with a 30 s deadline' });
    }
    return 'evaluated';
  }
  const { method, url, headers, body, count } = drive.http;
  const problem = driveUrlProblem(target, url);
  if (problem !== undefined) throw new CaptureError('invalid_input', problem);
  const statuses = new Map<number, number>();
  for (let i = 0; i < count; i++) {
    let res: Response;
    try {
      res = await fetch(url, { method, headers: headers ?? {}, ...(body === undefined ? {} : { body }), redirect: 'manual', signal: AbortSignal.any([signal, AbortSignal.timeout(DRIVE_STEP_MS)]) });
      await res.arrayBuffer();
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      throw new CaptureError('invalid_input', `the hunt's drive request ${i + 1} of ${count} (${method} ${url}) failed: ${(err as Error).message}`, { hint: 'check drive.http.url: the target must answer it', cause: err });
    }
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
  }
  return [...statuses].map(([status, n]) => `${n} × ${status}`).join(', ');
}

/** Runs hunt `huntId` to its end and records the outcome; never throws for a failed hunt. `drive` comes with the job. */
export async function runLeakHunt(deps: LeakHuntWorkerDeps, huntId: string, signal: AbortSignal, drive?: HuntDrive): Promise<LeakHuntRecord | null> {
  const { queue } = deps;
  const log = deps.log.child({ huntId, job: 'leak-hunt' });
  const found = await queue.leakHunts.get(huntId);
  if (found?.status === 'running') {
    // The job came back after its worker died mid-hunt: a new session has new object ids, so the hunt cannot go on.
    const failed: LeakHuntRecord = { ...found, status: 'failed', finishedAt: new Date().toISOString(), error: { code: 'internal', message: `the worker running this hunt stopped during ${found.phase ?? 'it'}; start a new hunt` } };
    await queue.leakHunts.put(failed);
    return failed;
  }
  if (found === null || found.status !== 'queued') return found;
  let hunt: LeakHuntRecord = { ...found, status: 'running', startedAt: new Date().toISOString(), worker: deps.workerId };
  const save = async (patch: Partial<LeakHuntRecord>): Promise<void> => {
    hunt = { ...hunt, ...patch };
    await queue.leakHunts.put(hunt);
  };
  const entry = await queue.targets.get(hunt.targetId);
  if (entry === null) {
    await save({ status: 'failed', finishedAt: new Date().toISOString(), error: { code: 'target_not_found', message: `target "${hunt.targetId}" is no longer registered` } });
    return hunt;
  }
  const controller = new AbortController();
  const abort = (why: string): void => controller.abort(new CaptureError('cancelled', why));
  signal.addEventListener('abort', () => abort('the worker is shutting down'), { once: true });
  const token = `hunt:${huntId}`;
  const dir = await mkdtemp(join(deps.tempDir ?? tmpdir(), scratchPrefix('hunt', huntId)));
  let lease: { stop(): void } | undefined;
  let locked = false;
  try {
    await save({ phase: 'lock' });
    const lockDeadline = Date.now() + LOCK_WAIT_MS;
    while (!(locked = await queue.locks.acquire(hunt.targetId, token, LEASE_MS))) {
      if (Date.now() > lockDeadline) {
        const message = `target ${hunt.targetId} stayed busy with other captures for ${LOCK_WAIT_MS / 1000} s`;
        // `satisfies`: a record's code is a plain string; this one must be a stable code of ERROR_CODES.
        await save({ status: 'failed', finishedAt: new Date().toISOString(), error: { code: 'target_busy' satisfies ErrorCode, message, hint: 'try the hunt again later' } });
        return hunt;
      }
      await sleep(1_000, controller.signal);
    }
    const redact = resolveRedaction(hunt.redact, entry.target.redact, deps.redact ?? 'none');
    await save({ redaction: { mode: redact, ...(redact === 'none' ? {} : { redactedStrings: 0 }) } });
    lease = startLease({ queue, targetId: hunt.targetId, captureId: huntId, token, leaseMs: LEASE_MS, log, onLost: () => abort('lost the target lock'), onCancelFlag: () => undefined });
    const endpoint = await resolveEndpoint(targetToEndpoint(entry.target), { timeoutMs: 10_000, signal: controller.signal });
    const session = await CdpSession.connect(endpoint.wsUrl, { connectTimeoutMs: 10_000, commandTimeoutMs: 60_000, signal: controller.signal });
    const files = { baseline: join(dir, 'baseline.heapsnapshot'), target: join(dir, 'target.heapsnapshot'), final: join(dir, 'final.heapsnapshot') };
    let marker: Marker | undefined;
    // Older records have no `allocations`: they were made before tracking existed, and track.
    const track = hunt.allocations !== false;
    let tracking = false;
    try {
      await session.send('HeapProfiler.enable');
      marker = await plantMarker(session, huntId);
      for (const name of ['baseline', 'target', 'final'] as const) {
        if (name !== 'baseline') {
          await save({ phase: name === 'target' ? 'wait' : 'wait-final' });
          await sleep(hunt.intervalMs, controller.signal);
        }
        await save({ phase: name });
        if (name !== 'baseline') await checkMarker(session, marker, `before the ${name} snapshot`);
        // The target snapshot of a tracking hunt is the one stopTrackingHeapObjects streams: its stacks, and the stop.
        const stop = name === 'target' && tracking;
        const { bytes, redactedStrings } = await snapshotTo(session, files[name], dir, controller.signal, redact, stop);
        if (stop) tracking = false;
        if (name === 'baseline') {
          marker.id = await markerId(session, marker);
          if (marker.id === 0) throw new CaptureError('protocol_error', 'the baseline snapshot did not number the hunt\'s marker object (HeapProfiler.getHeapObjectId answered 0)');
          if (track) {
            await startTracking(session);
            tracking = true;
          }
        } else await checkMarker(session, marker, `after the ${name} snapshot`);
        if (bytes > deps.maxBytes) throw new CaptureError('analysis_too_large', `the ${name} snapshot has ${bytes} bytes of JSON, more than the ${deps.maxBytes} this worker analyses`, { hint: 'raise HEAPCAP_ANALYSIS_MAX_BYTES on a worker with the memory for it' });
        const redaction = redact === 'none' ? hunt.redaction : { mode: redact, redactedStrings: (hunt.redaction?.redactedStrings ?? 0) + redactedStrings };
        await save({ snapshots: [...hunt.snapshots, { name, at: new Date().toISOString(), bytes }], redaction });
        // The drive's rounds after the baseline, and one more after the target snapshot: a leak grows in each, and a
        // buffer the target replaces is replaced once more before the final snapshot (so it is not a survivor).
        if (name !== 'final' && drive !== undefined) {
          const rounds = name === 'baseline' ? drive.rounds : 1;
          await save({ phase: 'drive' });
          for (let round = 1; round <= rounds; round++) {
            const outcome = await runDrive(drive, session, entry.target, controller.signal);
            log.info({ drive: hunt.drive, round, outcome, before: name === 'baseline' ? 'target' : 'final' }, 'leak hunt drove the target');
          }
        }
      }
    } finally {
      await removeMarker(session, marker);
      // Disabling clears the ids: only after the last snapshot. Closing the session does too, and stops
      // a tracker still running (a hunt that failed before its target snapshot).
      if (tracking) {
        // HeapProfiler.disable stops the tracker without a snapshot (stopTrackingHeapObjects would stream one).
        log.info({ phase: hunt.phase }, 'leak hunt stops tracking allocations (HeapProfiler.disable, then the session closes)');
        await session.send('HeapProfiler.disable', undefined, 2_000).catch(() => undefined);
      }
      await session.close();
    }
    await save({ phase: 'report' });
    const report = await leakHunt(files.baseline, files.target, files.final, { maxBytes: deps.maxBytes, rounds: drive?.rounds });
    const { key: reportKey } = await deps.sink.putDocument({ captureId: huntId, targetId: hunt.targetId, startedAt: new Date(hunt.createdAt), gzip: true }, 'leak-hunt', report);
    const classes = report.classes.map((c) => ({ name: c.name, count: c.count, selfSize: c.selfSize }));
    await save({ status: 'succeeded', phase: null, reportKey, classes, finishedAt: new Date().toISOString() });
    log.info({ classes: classes.slice(0, 5).map((c) => `${c.name} ${c.count}`) }, 'leak hunt succeeded');
  } catch (err) {
    const error = toCaptureError(controller.signal.aborted ? controller.signal.reason : err);
    log.warn({ code: error.code, err: error.message, phase: hunt.phase }, 'leak hunt failed');
    await save({ status: 'failed', finishedAt: new Date().toISOString(), error: { code: error.code, message: error.message, hint: error.hint } });
  } finally {
    lease?.stop();
    if (locked) await queue.locks.release(hunt.targetId, token).catch(() => undefined);
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
  return hunt;
}

/**
 * At most `size` hunts at a time in this process, whichever placement's queue
 * their jobs came from. A job waiting here keeps its BullMQ lock (renewed while
 * it is active) and its hunt stays `queued`.
 */
export class HuntSlots {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  constructor(size: number) {
    this.#free = size;
  }

  /** Run `fn` in a slot. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free -= 1;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await fn();
    } finally {
      // Hand the slot straight to the next waiter, or give it back.
      const next = this.#waiting.shift();
      if (next === undefined) this.#free += 1;
      else next();
    }
  }
}

/**
 * The consumer of the `leak-hunt` jobs of `placement` (the shared queue for
 * none; a placement's queue takes one at a time even when the analysis
 * concurrency is 0); `stop` aborts a running hunt (recorded as failed: cancelled). The
 * consumers of one process share `slots`.
 */
export function leakHuntConsumer(deps: LeakHuntWorkerDeps, stop: AbortSignal, slots: HuntSlots, placement?: string): JobConsumer<LeakHuntJob> {
  // Only this placement's workers can run its hunts: HEAPCAP_ANALYSIS_CONCURRENCY=0 (meant for workers near
  // their targets, which placed workers are) must not leave them queued for ever.
  const concurrency = placement === undefined ? deps.concurrency : Math.max(1, deps.concurrency);
  return new JobConsumer({ queue: deps.queue, log: deps.log, name: leakHuntQueueName(placement), schema: LeakHuntJobSchema, concurrency, run: (job) => slots.run(() => runLeakHunt(deps, job.huntId, stop, job.drive)) });
}
