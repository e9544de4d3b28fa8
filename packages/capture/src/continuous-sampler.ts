/**
 * Holds V8's sampling heap profiler on in one target for a continuous allocation profile (the watcher's,
 * services/worker/src/watch): its own inspector session, `HeapProfiler.startSampling` with objects collected by
 * GCs left out (the profile then holds what is still alive), and nothing else. Reads are not made here: a capture
 * job reads the running sampler over its own session (`readRunning`), so every stored profile is an ordinary
 * capture record.
 *
 * The sampler lives as long as this session: V8 stops it when the session that started it disables the
 * HeapProfiler domain or closes (V8InspectorSession's destructor disables every agent). So a worker that dies
 * (SIGKILL) leaves no sampler behind: its socket closes and the target stops sampling; the next holder starts
 * it again. `stop()` sends HeapProfiler.disable, which stops it without the full GC and the whole profile a
 * `stopSampling` would cost.
 */
import { releaseInspector } from './capture.ts';
import { resolveEndpoint, type EndpointSpec, type ResolvedEndpoint } from './endpoint.ts';
import { readRunningProfile } from './running-sampler.ts';
import { CdpSession } from './session.ts';

/** What `ensure()` did. */
export type EnsureOutcome =
  /** The session that started it is open: the sampler runs. */
  | 'running'
  /** Started now (first time, or again after the session closed: the target or this holder's link restarted). */
  | 'started'
  /** Another sampler runs in the target (a one-off profile, or a holder elsewhere): not started; ask again later. */
  | 'busy';

/** Deadlines of the holder's commands. */
export interface ContinuousSamplerTimeouts {
  connectMs: number;
  commandMs: number;
}

/** One target's continuous sampler. `close()` is idempotent. */
export class ContinuousSampler {
  readonly #spec: EndpointSpec;
  readonly #timeouts: ContinuousSamplerTimeouts;
  #session: CdpSession | undefined;
  #endpoint: ResolvedEndpoint | undefined;
  #intervalBytes = 0;
  /** This session enabled the HeapProfiler (so its disable is ours to send: it also clears V8's heap object ids). */
  #enabled = false;

  constructor(spec: EndpointSpec, timeouts: ContinuousSamplerTimeouts) {
    this.#spec = spec;
    this.#timeouts = timeouts;
  }

  /** True while the session that started the sampler is open. */
  get running(): boolean {
    return this.#session?.state === 'open';
  }

  /**
   * Keep the sampler on at `samplingIntervalBytes`: nothing when the session that started it is open at that
   * interval; else (re)connect and start it, unless another sampler runs (`busy`: its start would be ignored, and
   * its owner's stop would end ours). Throws a CaptureError when the target cannot be reached.
   */
  async ensure(samplingIntervalBytes: number): Promise<EnsureOutcome> {
    if (this.running && this.#intervalBytes === samplingIntervalBytes) return 'running';
    await this.stop();
    const endpoint = await resolveEndpoint(this.#spec, { timeoutMs: this.#timeouts.connectMs });
    this.#endpoint = endpoint;
    const session = await CdpSession.connect(endpoint.wsUrl, { connectTimeoutMs: this.#timeouts.connectMs, commandTimeoutMs: this.#timeouts.commandMs });
    this.#session = session;
    try {
      // Asking costs nothing when no sampler runs (the usual case); see running-sampler.ts.
      if ((await readRunningProfile(session)) !== null) {
        await this.stop();
        return 'busy';
      }
      await session.send('HeapProfiler.enable');
      this.#enabled = true;
      // Leave out what GCs already collected: the profile is then the live allocations, like a .heapprofile DevTools takes.
      await session.send('HeapProfiler.startSampling', { samplingInterval: samplingIntervalBytes, includeObjectsCollectedByMajorGC: false, includeObjectsCollectedByMinorGC: false });
      this.#intervalBytes = samplingIntervalBytes;
      return 'started';
    } catch (err) {
      await this.stop();
      throw err;
    }
  }

  /** Stop the sampler (HeapProfiler.disable) and close the session; never throws. */
  async stop(): Promise<void> {
    const session = this.#session;
    const endpoint = this.#endpoint;
    this.#session = undefined;
    this.#endpoint = undefined;
    this.#intervalBytes = 0;
    const enabled = this.#enabled;
    this.#enabled = false;
    if (enabled && session !== undefined && session.state === 'open' && session.responsive) {
      await session.send('HeapProfiler.disable', undefined, this.#timeouts.commandMs).catch(() => undefined);
    }
    if (session !== undefined) await session.close().catch(() => undefined);
    if (endpoint?.openedInspector !== undefined) await releaseInspector(endpoint).catch(() => undefined);
  }

  /** Same as stop(): a closed sampler can ensure() again. */
  close(): Promise<void> {
    return this.stop();
  }
}
