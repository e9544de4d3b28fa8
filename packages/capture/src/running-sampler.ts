/**
 * V8 has one sampling heap profiler per isolate, whichever inspector session started it: a second
 * `startSampling` is ignored, and any session's `stopSampling` stops it for all (V8's
 * v8-heap-profiler-agent-impl.cc). So before starting its own, a one-off profile asks whether one runs
 * (a continuous profile's), and if so reads that one instead of starting and stopping it.
 *
 * The only question V8 answers is `getSamplingProfile`: an error ("V8 sampling heap profiler was not
 * started.") when none runs, else the whole profile. Asking costs nothing when none runs; when one runs it
 * costs a full GC of the target first (the inspector starts the sampler with kSamplingForceGC, and
 * SamplingHeapProfiler::GetAllocationProfile then calls CollectAllGarbage).
 */
import type { Protocol } from 'devtools-protocol';
import { isCaptureError } from './errors.ts';
import type { CdpSession } from './session.ts';

/** The profile of the sampler running in the target, or null when none runs (a protocol error answer). */
export async function readRunningProfile(session: CdpSession, timeoutMs?: number): Promise<Protocol.HeapProfiler.SamplingHeapProfile | null> {
  try {
    return (await session.send('HeapProfiler.getSamplingProfile', undefined, timeoutMs)).profile;
  } catch (err) {
    // The one error V8 answers to getSamplingProfile is "not started"; a timeout or a closed socket is not an answer.
    if (isCaptureError(err, 'protocol_error')) return null;
    throw err;
  }
}
