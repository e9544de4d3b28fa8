/**
 * A sampling heap profile as a gzipped pprof `Profile` (what `go tool pprof`,
 * Pyroscope and Grafana read), encoded with `pprof-format` (Datadog's, the
 * encoder dd-trace and @datadog/pprof use). Sample types `inuse_objects`
 * (count) and `inuse_space` (bytes), the default; one pprof sample per folded
 * stack (the same folding as the summary, so pprof's top flat entry is
 * heapcap's top site); a location per frame, a function per (name, script,
 * line). The period is the sampling interval in bytes.
 */
import { gzipSync } from 'node:zlib';
import { Function as PprofFunction, Line, Location, Profile, Sample, StringTable, ValueType } from 'pprof-format';
import { attributeSamples, checkSamplingProfile, objectsOfSample } from './profile-tree.ts';

export interface PprofOptions {
  /** The interval the profile was taken with (bytes); without it, each sample counts one object. */
  samplingIntervalBytes?: number | undefined;
  /** When the profile was taken. */
  takenAt?: Date | undefined;
}

/** Encode a SamplingHeapProfile as gzipped pprof (`profile_invalid` when it is not one). */
export function profileToPprof(value: unknown, options: PprofOptions = {}): Buffer {
  const attributed = attributeSamples(checkSamplingProfile(value));
  const strings = new StringTable();
  const interval = options.samplingIntervalBytes;
  // pprof ids start at 1: frame i is function and location i + 1.
  const functions = attributed.frames.map(
    (f, i) =>
      new PprofFunction({
        id: i + 1,
        name: strings.dedup(f.functionName === '' ? '(anonymous)' : f.functionName),
        systemName: strings.dedup(f.functionName),
        filename: strings.dedup(f.url),
        startLine: f.line,
      }),
  );
  const locations = attributed.frames.map((f, i) => new Location({ id: i + 1, line: [new Line({ functionId: i + 1, line: f.line })] }));
  const byStack = new Map<string, { stack: number[]; objects: number; bytes: number }>();
  for (const s of attributed.samples) {
    const key = s.stack.join(',');
    const t = byStack.get(key) ?? { stack: s.stack, objects: 0, bytes: 0 };
    t.objects += interval === undefined ? 1 : objectsOfSample(s.size, interval);
    t.bytes += s.size;
    byStack.set(key, t);
  }
  const samples = [...byStack.values()].map((t) => new Sample({ locationId: t.stack.map((i) => i + 1), value: [Math.round(t.objects), t.bytes] }));
  const space = new ValueType({ type: strings.dedup('space'), unit: strings.dedup('bytes') });
  const profile = new Profile({
    sampleType: [new ValueType({ type: strings.dedup('inuse_objects'), unit: strings.dedup('count') }), new ValueType({ type: strings.dedup('inuse_space'), unit: strings.dedup('bytes') })],
    sample: samples,
    location: locations,
    function: functions,
    stringTable: strings,
    periodType: space,
    period: interval ?? 0,
    timeNanos: options.takenAt === undefined ? 0 : BigInt(options.takenAt.getTime()) * 1_000_000n,
    defaultSampleType: strings.dedup('inuse_space'),
  });
  return gzipSync(profile.encode());
}
