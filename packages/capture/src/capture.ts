/**
 * The capture pipeline: connect → preflight → warm → enable → gc → generate →
 * serialize → sink, on one CDP session, with a phase clock and typed errors.
 *
 * The engine knows nothing of storage: the caller passes `consume`, which
 * receives the snapshot as a Readable and resolves when the artifact is
 * complete. The snapshot itself is take-snapshot.ts (the one snapshot path,
 * which leak hunts use too): the stream ends only after the snapshot was
 * validated (response received after the last chunk, JSON closed); otherwise
 * it is destroyed with `snapshot_truncated` or `target_closed`, so a sink never
 * completes a bad artifact.
 */
import { definedOnly } from './defined.ts';
import type { Readable } from 'node:stream';
import { CaptureError, toCaptureError } from './errors.ts';
import { PhaseClock, type Phase, type PhaseTimings } from './clock.ts';
import { resolveEndpoint, type EndpointSpec, type ResolvedEndpoint } from './endpoint.ts';
import { CdpSession } from './session.ts';
import { assertExpectedPid, gatherRuntimeFacts, type RuntimeFacts } from './runtime.ts';
import { decideWarm, runWarm, type WarmMethod, type WarmMode, type WarmReport } from './warm.ts';
import type { SnapshotStreamStats } from './snapshot-stream.ts';
import { takeSnapshotVia, type ReleaseChunk } from './take-snapshot.ts';
import { parseV8Version, compareVersions } from './v8-version.ts';
import { throwIfAborted } from './deadline.ts';
import { checkHeadroom, forcedFailure } from './headroom/gate.ts';
import type { HeadroomOptions, HeadroomReport } from './headroom/decision.ts';
import { readPeak, type PeakReport } from './headroom/peak.ts';
import { closeOpenedInspector, leftOpenText, NOT_OPENED_BY_US, type InspectorRelease } from './inspector-close.ts';
import type { SnapshotFlags, SnapshotTransform } from './types.ts';
import { preparePipe, readPipeSnapshot, removePipe, type PipeSetup, type SnapshotTransport, type TransportReport } from './pipe-transport.ts';

/** Deadlines, in milliseconds. */
export interface CaptureTimeouts {
  /** Endpoint discovery and WebSocket open. */
  connectMs: number;
  /** Each ordinary protocol command. */
  commandMs: number;
  /** The whole snapshot (generation + serialization). */
  snapshotMs: number;
}

export const DEFAULT_TIMEOUTS: CaptureTimeouts = { connectMs: 10_000, commandMs: 30_000, snapshotMs: 30 * 60_000 };

/**
 * Receives the snapshot bytes and the facts preflight gathered; resolves when
 * the artifact is complete. `release` gives each chunk back to the engine's
 * block pool once the consumer's last stage is done with it (a store takes it
 * in its put options).
 */
export type CaptureConsumer<T> = (snapshot: Readable, facts: RuntimeFacts, release: ReleaseChunk) => Promise<T>;

/** Progress reported while the capture runs. */
export type CaptureProgress =
  | { phase: Exclude<Phase, 'generate' | 'serialize'> }
  | { phase: 'generate'; done: number; total: number }
  | { phase: 'serialize'; bytes: number; chunks: number; spilledBytes: number };

export interface CaptureOptions extends SnapshotFlags {
  endpoint: EndpointSpec;
  warm?: WarmMode;
  warmMethod?: WarmMethod;
  gc?: boolean;
  /** In-memory buffer ceiling before spilling to disk (default 16 MiB). */
  memoryCeilingBytes?: number;
  spillDir?: string;
  /** Rewrites the bytes before the spill buffer and the consumer see them (redaction; TakeSnapshotOptions). */
  transform?: SnapshotTransform;
  timeouts?: Partial<CaptureTimeouts>;
  signal?: AbortSignal;
  onProgress?: (progress: CaptureProgress) => void;
  /**
   * Ask V8 for generation progress (`generate` progress with done/total).
   * Off by default: V8 then walks the whole heap once more just to count the
   * objects, which lengthens the target's pause. Measured on Node 22, 525 MB
   * snapshot: +1.2 s of the target's main-thread CPU (+12% of generation),
   * 3 of 3 runs. Without it, `generate` progress reports done = total = 0.
   */
  reportProgress?: boolean;
  /**
   * Runs at the end of preflight with the facts, before anything heavy touches
   * the target. Throwing refuses the capture (e.g. storage not writable).
   */
  beforeSnapshot?: (facts: RuntimeFacts, endpoint: ResolvedEndpoint) => Promise<void> | void;
  /** Capture even when the headroom gate refuses (recorded as `headroom.forced`). */
  force?: boolean;
  /** The target's memory limit, per target in configuration (used beside what the target reports). */
  memoryLimitBytes?: number;
  /** Headroom gate tuning per target: safety margin, model coefficients. */
  headroom?: Pick<HeadroomOptions, 'marginBytes' | 'model' | 'previous'>;
  /**
   * How the snapshot bytes travel (default `cdp`): `pipe` has a Node.js target
   * on a shared filesystem write them with its own `writeHeapSnapshot()` into a
   * FIFO heapcap reads (pipe-transport.ts), `auto` uses the pipe where the
   * target can and CDP elsewhere.
   */
  transport?: SnapshotTransport;
  /** Where the FIFO is made (default the OS temp dir); the target must see the same directory. */
  pipeDir?: string;
}

/** Everything the engine learnt and measured, plus what `consume` returned. */
export interface CaptureResult<T> {
  endpoint: ResolvedEndpoint;
  facts: RuntimeFacts;
  warm: WarmReport;
  gc: boolean;
  /** The flags actually sent with takeHeapSnapshot. */
  flags: SnapshotFlags;
  timings: PhaseTimings;
  stream: SnapshotStreamStats;
  /** Preflight memory facts, the estimate and the gate's decision. */
  headroom: HeadroomReport;
  /** The target's peak memory during the capture against the estimate. */
  peak: PeakReport;
  /** Whether heapcap opened the target's inspector (node-pid) and closed it again. */
  inspector: InspectorRelease;
  /** How the snapshot bytes travelled, and why. */
  transport: TransportReport;
  startedAt: Date;
  finishedAt: Date;
  consumed: T;
}

/** Thrown errors carry the phase in `error.phase` and the timings so far in `details.timings`. */
export async function captureHeapSnapshot<T>(
  options: CaptureOptions,
  consume: CaptureConsumer<T>,
): Promise<CaptureResult<T>> {
  // A timeout the caller left undefined keeps its default.
  const timeouts = { ...DEFAULT_TIMEOUTS, ...definedOnly(options.timeouts) };
  const { signal } = options;
  const startedAt = new Date();
  const clock = new PhaseClock();
  const progress = (p: CaptureProgress): void => options.onProgress?.(p);
  const enter = (phase: Exclude<Phase, 'generate' | 'serialize'>, at?: number): void => {
    clock.enter(phase, at);
    progress({ phase });
  };
  let session: CdpSession | undefined;
  let endpoint: ResolvedEndpoint | undefined;
  let heapProfilerEnabled = false;
  let headroom: HeadroomReport | undefined;
  // Leave the target as we found it, once, on every path: disable what we
  // enabled, close the inspector if we opened it, close our session.
  let released: Promise<InspectorRelease> | undefined;
  const release = (): Promise<InspectorRelease> =>
    (released ??= (async () => {
      if (session !== undefined) await releaseTarget(session, heapProfilerEnabled);
      const inspector = await releaseInspector(endpoint, session);
      await session?.close();
      return inspector;
    })());
  try {
    enter('connect');
    throwIfAborted(signal);
    endpoint = await resolveEndpoint(options.endpoint, { timeoutMs: timeouts.connectMs, ...(signal ? { signal } : {}) });
    session = await CdpSession.connect(endpoint.wsUrl, {
      connectTimeoutMs: timeouts.connectMs,
      commandTimeoutMs: timeouts.commandMs,
      ...(signal ? { signal } : {}),
    });

    enter('preflight');
    const facts = await gatherRuntimeFacts(session, endpoint);
    assertExpectedPid(endpoint, facts);
    headroom = await checkHeadroom(session, endpoint, facts, { ...options.headroom, force: options.force === true, memoryLimitBytes: options.memoryLimitBytes });
    await options.beforeSnapshot?.(facts, endpoint);
    throwIfAborted(signal);

    enter('warm');
    const warmMode = options.warm ?? 'auto';
    const decision = decideWarm(warmMode, facts.v8Version);
    let warm: WarmReport = { mode: warmMode, decision: 'skipped', reason: decision.reason };
    if (decision.warm) {
      const method = options.warmMethod ?? 'debugger';
      const durationMs = await runWarm(session, method);
      warm = { mode: warmMode, decision: 'warmed', reason: decision.reason, method, durationMs };
    }

    enter('enable');
    await session.send('HeapProfiler.enable');
    heapProfilerEnabled = true;
    // Only a requested GC is timed as `gc`; without one the phase stays 0.
    if (options.gc === true) {
      enter('gc');
      await session.send('HeapProfiler.collectGarbage', undefined, timeouts.snapshotMs);
    }
    throwIfAborted(signal);

    const flags = snapshotFlags(options, facts);
    const route = await chooseTransport(session, facts, flags, options, endpoint.wsUrl);
    const { stats, finishedAtMs, consumed, transport } = await streamSnapshot(session, flags, timeouts.snapshotMs, clock, progress, options, consume, facts, route);

    clock.stop(finishedAtMs);
    const peak = await readPeak(session, endpoint, headroom, timeouts.commandMs);
    const inspector = await release();
    return {
      endpoint,
      facts,
      warm,
      gc: options.gc === true,
      flags,
      timings: clock.timings(),
      stream: stats,
      headroom,
      peak,
      inspector,
      transport,
      startedAt,
      finishedAt: new Date(),
      consumed,
    };
  } catch (err) {
    clock.stop();
    // A forced capture that fails says so: the record must show the gate was overridden.
    const error = headroom?.forced === true ? forcedFailure(toCaptureError(err), headroom) : toCaptureError(err);
    error.phase ??= clock.current;
    error.timings ??= clock.timings();
    const inspector = await release();
    // Records and logs must say that a debugger port we opened is still there.
    if (inspector.openedByHeapcap && !inspector.closed) error.message += `; ${leftOpenText(inspector)}`;
    throw error;
  }
}

/** Close the target's inspector if heapcap opened it (node-pid), through `session` while it is usable; never throws. */
export async function releaseInspector(endpoint: ResolvedEndpoint | undefined, session?: CdpSession): Promise<InspectorRelease> {
  if (endpoint?.openedInspector === undefined) return NOT_OPENED_BY_US;
  return closeOpenedInspector(endpoint.openedInspector, { session, wsUrl: endpoint.wsUrl });
}

/**
 * A courtesy wait: closing the session disables its domains anyway, so a
 * target that does not answer at once is not waited for.
 */
const RELEASE_MS = 1_000;

/** Disable what we enabled; never throws (the target may already be gone). */
async function releaseTarget(session: CdpSession, heapProfilerEnabled: boolean): Promise<void> {
  // A session whose command timed out talks to a frozen or busy target: it would not answer either.
  if (!heapProfilerEnabled || session.state !== 'open' || !session.responsive) return;
  try {
    await session.send('HeapProfiler.disable', undefined, RELEASE_MS);
  } catch {
    // Best effort: a closed session has released everything anyway.
  }
}

/**
 * `captureNumericValue` exists since V8 9.6 (Chrome 96); `exposeInternals` since
 * V8 10.9 (Chrome 109), which deprecated `treatGlobalObjectsAsRoots`. Older targets
 * ignore unknown parameters, so we only send what the target understands and
 * record exactly what was sent.
 */
function snapshotFlags(options: SnapshotFlags, facts: RuntimeFacts): SnapshotFlags {
  const v = facts.v8Version === undefined ? undefined : parseV8Version(facts.v8Version);
  const atLeast = (min: number[]): boolean => v !== undefined && compareVersions(v, min) >= 0;
  const flags: SnapshotFlags = {};
  if (options.captureNumericValue === true && atLeast([9, 6])) flags.captureNumericValue = true;
  if (options.exposeInternals === true && atLeast([10, 9])) flags.exposeInternals = true;
  if (options.treatGlobalObjectsAsRoots !== undefined) flags.treatGlobalObjectsAsRoots = options.treatGlobalObjectsAsRoots;
  return flags;
}

/** The way the snapshot will travel: a FIFO ready for it, or CDP and why. */
type Route = { pipe: PipeSetup; requested: SnapshotTransport } | { pipe: undefined; report: TransportReport };

/** Decide the transport before the snapshot; `pipe` required but impossible is an error that says why. */
async function chooseTransport(session: CdpSession, facts: RuntimeFacts, flags: SnapshotFlags, options: CaptureOptions, target: string): Promise<Route> {
  const requested = options.transport ?? 'cdp';
  if (requested === 'cdp') return { pipe: undefined, report: { requested, used: 'cdp', reason: 'cdp was requested' } };
  const setup = flags.treatGlobalObjectsAsRoots !== undefined ? { skip: 'treatGlobalObjectsAsRoots exists only over CDP' } : await preparePipe(session, facts, options.pipeDir, target);
  if ('skip' in setup) {
    if (requested === 'pipe') {
      throw new CaptureError('invalid_input', `the pipe transport is not possible for this target: ${setup.skip}`, {
        hint: 'use --transport auto (the pipe where possible, CDP elsewhere) or cdp',
      });
    }
    return { pipe: undefined, report: { requested, used: 'cdp', reason: setup.skip } };
  }
  return { pipe: setup, requested };
}

/** Take the snapshot (takeSnapshot, through the pipe when routed so) and feed it to `consume`; returns when the artifact is complete. */
async function streamSnapshot<T>(
  session: CdpSession,
  flags: SnapshotFlags,
  snapshotMs: number,
  clock: PhaseClock,
  progress: (p: CaptureProgress) => void,
  options: CaptureOptions,
  consume: CaptureConsumer<T>,
  facts: RuntimeFacts,
  route: Route,
): Promise<{ stats: SnapshotStreamStats; finishedAtMs: number; consumed: T; transport: TransportReport }> {
  // Attaching the sink belongs to generate: left in the phase before, it made
  // `enable` read 1.3-3.9 ms where the round trip alone took 0.3-1.1 ms (same
  // target, back to back, load average 4-6), and `gc` before that.
  clock.enter('generate');
  progress({ phase: 'generate', done: 0, total: 0 });
  let transport: TransportReport | undefined = route.pipe === undefined ? route.report : undefined;
  const taken = await takeSnapshotVia(
    session,
    (snapshot, release) => consume(snapshot, facts, release),
    {
      flags,
      reportProgress: options.reportProgress === true,
      timeoutMs: snapshotMs,
      memoryCeilingBytes: options.memoryCeilingBytes,
      spillDir: options.spillDir,
      transform: options.transform,
      signal: options.signal,
      onGenerateProgress: (done, total) => progress({ phase: 'generate', done, total }),
      onChunk: (at, first, stats) => {
        if (first) clock.enter('serialize', at);
        progress({ phase: 'serialize', bytes: stats.bytes, chunks: stats.chunks, spilledBytes: stats.spilledBytes });
      },
      // Said to the caller too: from the last chunk on, the capture waits for the store to finish the upload,
      // and a live phase still reading `serialize` then would be stale.
      onComplete: (lastChunkAt) => {
        clock.enter('sink', lastChunkAt);
        progress({ phase: 'sink' });
      },
    },
    route.pipe === undefined
      ? undefined
      : async ({ push, overCdp, consumerFailed, gotChunks, consumerError }) => {
          const { pipe, requested } = route;
          try {
            // A failing sink stops the capture at once: no point in reading a snapshot we cannot store.
            await Promise.race([readPipeSnapshot(session, pipe, flags, snapshotMs, push), consumerFailed]);
            transport = { requested, used: 'pipe', reason: 'the target shares the pipe directory' };
            return;
          } catch (err) {
            // Nothing arrived yet and the target is fine: the same snapshot over CDP, unless the pipe was
            // required. A target that timed out, closed or was cancelled is not asked again.
            if (gotChunks() || consumerError() !== undefined || requested === 'pipe' || targetFailure(err)) throw err;
            transport = { requested, used: 'cdp', reason: `the pipe failed before any byte: ${(err as Error).message}` };
          } finally {
            await removePipe(pipe);
          }
          await overCdp();
        },
  );
  return { ...taken, transport: transport ?? { requested: 'cdp', used: 'cdp', reason: 'cdp was requested' } };
}

/** The target (not the pipe) failed: it is frozen, busy, gone, or the capture was cancelled. */
function targetFailure(err: unknown): boolean {
  return err instanceof CaptureError && (err.code === 'protocol_timeout' || err.code === 'target_closed' || err.code === 'cancelled');
}
