/**
 * The allocation sampling profile: connect → preflight → start → sampling →
 * stop → sink, on the same CDP session abstraction as the snapshot (Node,
 * node-pid and Chromium endpoints alike), with its own phase clock.
 *
 * `HeapProfiler.startSampling` makes V8 record a stack for one allocation per
 * `samplingInterval` bytes (on average, Poisson-distributed); `stopSampling`
 * returns the SamplingHeapProfile `{head, samples}`: the call tree of the
 * sampled allocations still alive at stop time. Its JSON is what Chrome
 * DevTools' Memory tab loads as a `.heapprofile`. Nothing is paused for it:
 * there is no headroom gate (docs/watch.md, "Sampling profiles").
 *
 * Whatever happens after `startSampling` (cancel, a failing sink, a deadline),
 * `stopSampling` is sent before the session closes, so the profiler is never
 * left running in the target. The session is therefore not tied to the abort
 * signal (an aborted session closes at once); the engine watches it instead.
 */
import { definedOnly } from './defined.ts';
import { Readable } from 'node:stream';
import type { Protocol } from 'devtools-protocol';
import { CaptureError, toCaptureError } from './errors.ts';
import { PhaseClock, type PhaseTimings } from './clock.ts';
import { resolveEndpoint, type EndpointSpec, type ResolvedEndpoint } from './endpoint.ts';
import { CdpSession } from './session.ts';
import { assertExpectedPid, gatherRuntimeFacts, type RuntimeFacts } from './runtime.ts';
import { sleep, throwIfAborted, withDeadline } from './deadline.ts';
import { DEFAULT_TIMEOUTS, releaseInspector, type CaptureTimeouts } from './capture.ts';
import { leftOpenText, type InspectorRelease } from './inspector-close.ts';
import { readRunningProfile } from './running-sampler.ts';

/** Phases of a sampling profile, in order; `sampling` is the requested duration. */
export const SAMPLING_PHASES = ['connect', 'preflight', 'start', 'sampling', 'stop', 'sink'] as const;
export type SamplingPhase = (typeof SAMPLING_PHASES)[number];
export type SamplingTimings = PhaseTimings<SamplingPhase>;
/** Progress reported while a sampling profile runs: the phase entered. */
export interface SamplingProgress {
  phase: SamplingPhase;
}

/** V8's own default sampling interval (bytes between samples, on average). */
export const DEFAULT_SAMPLING_INTERVAL_BYTES = 32_768;

export interface SamplingOptions {
  endpoint: EndpointSpec;
  /** How long to sample. */
  durationMs: number;
  /** Average bytes between two samples (default 32768, V8's default). */
  samplingIntervalBytes?: number;
  /** connectMs and commandMs apply; `snapshotMs` bounds the sink after the stop. */
  timeouts?: Partial<CaptureTimeouts>;
  /** Cancels the capture; the target's profiler is still stopped. */
  signal?: AbortSignal;
  onProgress?: (progress: SamplingProgress) => void;
  /**
   * Read the sampler already running in the target (a continuous profile's) at once: no start, no window, no stop;
   * `sampler_not_running` when none runs.
   */
  readRunning?: boolean;
  /** Runs at the end of preflight; throwing refuses the capture before sampling starts (e.g. storage not writable). */
  beforeSampling?: (facts: RuntimeFacts, endpoint: ResolvedEndpoint) => Promise<void> | void;
}

/** Counts of the profile that was stored. */
export interface SamplingProfileStats {
  /** Samples in the profile (sampled allocations still alive when sampling stopped). */
  samples: number;
  /** Call-tree nodes. */
  nodes: number;
  /** Sum of the sampled allocations' sizes, in bytes (V8 scales each sample to the interval). */
  sampledBytes: number;
  /** Bytes of the profile's JSON. */
  bytes: number;
}

/** Everything the engine learnt and measured, plus what `consume` returned. */
export interface SamplingResult<T> {
  endpoint: ResolvedEndpoint;
  facts: RuntimeFacts;
  /**
   * `own`: this capture started and stopped the sampler; `running`: one was already running (a continuous
   * profile's), so it read that one and left it on (its interval and start are the running sampler's).
   */
  sampler: 'own' | 'running';
  samplingIntervalBytes: number;
  /** The requested duration. */
  durationMs: number;
  timings: SamplingTimings;
  profile: SamplingProfileStats;
  inspector: InspectorRelease;
  startedAt: Date;
  finishedAt: Date;
  consumed: T;
}

/**
 * stopSampling after a failure: a courtesy to a target that answers (a frozen
 * one would not), bounded so a cancel returns promptly.
 */
const STOP_AFTER_FAILURE_MS = 5_000;
/** HeapProfiler.disable on the way out (closing the session disables it anyway). */
const RELEASE_MS = 1_000;

/** Take an allocation sampling profile; thrown errors carry `phase`, `timings` and `details.samplingStopped`. */
export async function captureSamplingProfile<T>(options: SamplingOptions, consume: (profile: Readable, facts: RuntimeFacts) => Promise<T>): Promise<SamplingResult<T>> {
  // A timeout the caller left undefined keeps its default.
  const timeouts = { ...DEFAULT_TIMEOUTS, ...definedOnly(options.timeouts) };
  const { signal } = options;
  const intervalBytes = options.samplingIntervalBytes ?? DEFAULT_SAMPLING_INTERVAL_BYTES;
  const startedAt = new Date();
  const clock = new PhaseClock<SamplingPhase>(undefined, SAMPLING_PHASES);
  const enter = (phase: SamplingPhase): void => {
    clock.enter(phase);
    options.onProgress?.({ phase });
  };
  let session: CdpSession | undefined;
  let endpoint: ResolvedEndpoint | undefined;
  let enabled = false;
  let sampling = false;
  try {
    enter('connect');
    throwIfAborted(signal);
    endpoint = await resolveEndpoint(options.endpoint, { timeoutMs: timeouts.connectMs, ...(signal ? { signal } : {}) });
    session = await CdpSession.connect(endpoint.wsUrl, { connectTimeoutMs: timeouts.connectMs, commandTimeoutMs: timeouts.commandMs });
    throwIfAborted(signal);

    enter('preflight');
    const facts = await gatherRuntimeFacts(session, endpoint);
    assertExpectedPid(endpoint, facts);
    await options.beforeSampling?.(facts, endpoint);
    throwIfAborted(signal);

    enter('start');
    await session.send('HeapProfiler.enable');
    enabled = true;
    // One sampler per isolate (running-sampler.ts): a running one is read, never started over or stopped, so a
    // one-off profile does not end a continuous one.
    const running = options.readRunning === true ? true : (await readRunningProfile(session)) !== null;
    if (!running) {
      // Marked before the answer: a start that times out may still have started.
      sampling = true;
      await session.send('HeapProfiler.startSampling', { samplingInterval: intervalBytes });
    }

    enter('sampling');
    if (options.readRunning !== true) await samplingWindow(options.durationMs, session, signal);

    enter('stop');
    let profile: Protocol.HeapProfiler.SamplingHeapProfile | null;
    if (sampling) {
      profile = (await session.send('HeapProfiler.stopSampling')).profile;
      sampling = false;
    } else {
      profile = await readRunningProfile(session);
      if (profile === null) {
        throw new CaptureError('sampler_not_running', 'no sampling heap profiler runs in the target: the continuous profile\'s sampler stopped (its worker or the target restarted, or a one-off profile stopped it)', {
          hint: 'the worker that holds the target starts it again within a quarter of HEAPCAP_WATCH_INTERVAL; the next read records the gap',
        });
      }
    }
    const json = Buffer.from(JSON.stringify(checkProfile(profile)));
    const stats = { ...profileStats(profile), bytes: json.length };

    enter('sink');
    throwIfAborted(signal);
    const consumed = await withDeadline(
      consume(Readable.from([json]), facts),
      timeouts.snapshotMs,
      () => new CaptureError('storage_failed', `the sink did not store the ${json.length}-byte profile within ${timeouts.snapshotMs} ms`),
      signal,
    );
    clock.stop();
    const inspector = await release(session, endpoint, enabled);
    return { endpoint, facts, sampler: running ? 'running' : 'own', samplingIntervalBytes: intervalBytes, durationMs: options.readRunning === true ? 0 : options.durationMs, timings: clock.timings(), profile: stats, inspector, startedAt, finishedAt: new Date(), consumed };
  } catch (err) {
    clock.stop();
    const error = toCaptureError(err);
    error.phase ??= clock.current;
    error.timings ??= clock.timings();
    // The point of this file: a cancelled or failed capture leaves no profiler running in a target
    // that is still there (one whose session closed has dropped its profiler with it).
    if (sampling && session?.state === 'open') {
      const stopped = await stopQuietly(session);
      Object.assign(error, { details: { ...error.details, samplingStopped: stopped } });
      if (!stopped) error.message += '; heapcap could not stop the sampling profiler (it stops when the target drops the inspector session, which heapcap closes now)';
    }
    const inspector = await release(session, endpoint, enabled);
    if (inspector.openedByHeapcap && !inspector.closed) error.message += `; ${leftOpenText(inspector)}`;
    throw error;
  }
}

/**
 * Wait out the sampling window; a cancel or a target that dies ends it early.
 * The timer goes with it: a pending 10-minute timer would keep a CLI process
 * alive after its capture had failed.
 */
async function samplingWindow(ms: number, session: CdpSession, signal: AbortSignal | undefined): Promise<void> {
  const done = new AbortController();
  const sleeping = sleep(ms, signal === undefined ? done.signal : AbortSignal.any([signal, done.signal]));
  try {
    await Promise.race([sleeping, session.closed()]);
  } finally {
    done.abort();
    await sleeping.catch(() => undefined);
  }
}

/** stopSampling, never throws; true when the target confirmed it. */
async function stopQuietly(session: CdpSession): Promise<boolean> {
  if (!session.responsive) return false;
  try {
    await session.send('HeapProfiler.stopSampling', undefined, STOP_AFTER_FAILURE_MS);
    return true;
  } catch {
    return false;
  }
}

/** Disable what we enabled, close an inspector we opened (node-pid), close the session; never throws. */
async function release(session: CdpSession | undefined, endpoint: ResolvedEndpoint | undefined, enabled: boolean): Promise<InspectorRelease> {
  if (session !== undefined && enabled && session.state === 'open' && session.responsive) {
    await session.send('HeapProfiler.disable', undefined, RELEASE_MS).catch(() => undefined);
  }
  const inspector = await releaseInspector(endpoint, session);
  await session?.close();
  return inspector;
}

/** A profile without a call tree or samples list is not a profile DevTools can load. */
function checkProfile(profile: Protocol.HeapProfiler.SamplingHeapProfile | undefined): Protocol.HeapProfiler.SamplingHeapProfile {
  if (typeof profile?.head?.callFrame !== 'object' || !Array.isArray(profile.samples)) {
    throw new CaptureError('protocol_error', 'HeapProfiler.stopSampling answered without a profile ({head, samples})', {
      hint: 'the target does not support the sampling heap profiler; take a heap snapshot instead',
    });
  }
  return profile;
}

/** Node count and sampled bytes of the call tree (iterative: deep stacks make deep trees). */
function profileStats(profile: Protocol.HeapProfiler.SamplingHeapProfile): Omit<SamplingProfileStats, 'bytes'> {
  let nodes = 0;
  let sampledBytes = 0;
  const stack = [profile.head];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    nodes += 1;
    sampledBytes += node.selfSize;
    stack.push(...node.children);
  }
  return { samples: profile.samples.length, nodes, sampledBytes };
}
