/** A target: its memory curve over a chosen range with its captures on the same axis, and "Capture now". */
import { useState } from 'preact/hooks';
import { api, query, type CaptureRecord, type Samples } from '../api.ts';
import { MemoryChart, TRIGGER_COLOURS } from '../components/memory-chart.tsx';
import { TargetHealth } from '../components/target-health.tsx';
import { time } from '../format.ts';
import { useLoad } from '../hooks.ts';
import { go, href } from '../router.ts';
import { useCan } from '../session.tsx';
import { CaptureTable, ErrorNote } from './parts.tsx';
import { LatestProfile } from '../flame/profile-views.tsx';
import type { ApiFailure } from '../api.ts';

const RANGES: Record<string, number> = { '15 min': 15 * 60_000, '1 h': 3_600_000, '6 h': 6 * 3_600_000, '24 h': 24 * 3_600_000 };

export function TargetView({ id }: { id: string }) {
  const [range, setRange] = useState('1 h');
  const [until, setUntil] = useState(() => Date.now());
  const since = until - RANGES[range]!;
  const iso = (t: number) => new Date(t).toISOString();
  const samples = useLoad(() => api<Samples>('GET', `/v1/targets/${encodeURIComponent(id)}/samples${query({ since: iso(since), until: iso(until), limit: 10_000 })}`), [id, since, until]);
  const captures = useLoad(() => api<{ items: CaptureRecord[] }>('GET', `/v1/captures${query({ target: id, since: iso(since), limit: 100 })}`), [id, since, until]);
  const canCapture = useCan('captures:write');
  const canRead = useCan('artifacts:read');
  const [failure, setFailure] = useState<ApiFailure | undefined>();
  const [busy, setBusy] = useState(false);

  const captureNow = async (): Promise<void> => {
    setBusy(true);
    try {
      const res = await api<{ capture: CaptureRecord }>('POST', '/v1/captures', { target: id, reason: 'console: Capture now' });
      go(href('captures', res.capture.id));
    } catch (err) {
      setFailure(err as ApiFailure);
      setBusy(false);
    }
  };

  const items = captures.data?.items ?? [];
  const points = samples.data?.items ?? [];
  // The axis starts where the data does when that is later than the range (a target registered or
  // sampled for 10 minutes fills the chart, not its last sixth), captures included; the note says so.
  const first = Math.min(points[0]?.t ?? Infinity, ...items.map((c) => Date.parse(c.createdAt)));
  const fitted = Number.isFinite(first) && first > since + (until - since) * 0.05;
  const start = fitted ? Math.max(since, first - (until - first) * 0.02) : since;
  return (
    <section>
      <h1>
        Target <code>{id}</code>
      </h1>
      <div class="toolbar">
        <label>
          Range{' '}
          <select value={range} onChange={(e) => setRange(e.currentTarget.value)}>
            {Object.keys(RANGES).map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => setUntil(Date.now())}>
          Refresh
        </button>
        {canCapture && (
          <button type="button" class="primary" data-testid="capture-now" disabled={busy} onClick={() => void captureNow()}>
            Capture now
          </button>
        )}
        {canCapture && (
          <a class="button" href={`${href('hunts')}?target=${encodeURIComponent(id)}`} data-testid="hunt">
            Hunt
          </a>
        )}
        <a href={`${href('captures')}?target=${encodeURIComponent(id)}`}>All captures of {id}</a>
      </div>
      {samples.data !== undefined && (
        <p>
          Status: <TargetHealth down={samples.data.down} lastSampleAt={points[points.length - 1]?.t ?? null} />
        </p>
      )}
      <ErrorNote error={failure ?? samples.error ?? captures.error} />
      <MemoryChart samples={points} captures={items} from={start / 1000} to={until / 1000} />
      {fitted && (
        <p class="muted" data-testid="data-starts">
          The data starts at <time dateTime={new Date(first).toISOString()}>{time(new Date(first).toISOString())}</time>: the chart shows from there, not the whole {range}.
        </p>
      )}
      <p class="legend">
        Captures:{' '}
        {Object.entries(TRIGGER_COLOURS).map(([k, c]) => (
          <span key={k} class={`swatch swatch-${k}`} data-colour={c}>
            {k}
          </span>
        ))}{' '}
        (dashed: did not succeed)
      </p>
      {samples.data?.source === 'prometheus' && (
        <p class="muted" data-testid="samples-source">
          This range starts before what Redis keeps: its {samples.data.items.length} points come from Prometheus (HEAPCAP_PROMETHEUS_URL), one per step.
        </p>
      )}
      {samples.data !== undefined && samples.data.items.length === 0 && (
        <p class="muted">No memory samples in this range. Every target is sampled each HEAPCAP_SAMPLE_INTERVAL (default 1 min; 0 samples only targets a watch rule watches): the first sample comes within an interval of the target's registration, or the watcher cannot reach it (see the service log).</p>
      )}
      <h2>Captures in this range</h2>
      <CaptureTable items={items} showTarget={false} />
      {canRead && (
        <>
          <h2>Latest allocation profile</h2>
          <LatestProfile targetId={id} />
        </>
      )}
    </section>
  );
}
