/** Targets: every registered target, its labels, its latest heap numbers and a sparkline of its recent samples. */
import { useMemo, useState } from 'preact/hooks';
import { api, query, type Sample, type Target, type TargetDown } from '../api.ts';
import { Sparkline } from '../components/sparkline.tsx';
import { TargetHealth } from '../components/target-health.tsx';
import { bytes } from '../format.ts';
import { useInterval, useLoad } from '../hooks.ts';
import { href } from '../router.ts';
import { ErrorNote } from './parts.tsx';

function Labels({ labels }: { labels: Record<string, string> | undefined }) {
  return (
    <span class="labels">
      {Object.entries(labels ?? {}).map(([k, v]) => (
        <span key={k} class="label">
          {k}={v}
        </span>
      ))}
    </span>
  );
}

function TargetRow({ target, samples, down }: { target: Target; samples: Sample[] | undefined; down: TargetDown | null | undefined }) {
  // A target that does not answer shows no heap numbers and no curve as if current: its status says why, and since when.
  const dead = down !== null && down !== undefined;
  const last = dead ? undefined : samples?.[samples.length - 1];
  return (
    <tr data-target={target.id}>
      <td>
        <a href={href('targets', target.id)}>{target.id}</a>
      </td>
      <td>{target.kind}</td>
      <td>
        <Labels labels={target.labels} />
      </td>
      <td>{samples === undefined ? '…' : <TargetHealth down={down} lastSampleAt={samples[samples.length - 1]?.t ?? null} />}</td>
      <td class="num">{bytes(last?.heapUsedBytes)}</td>
      <td class="num">{bytes(last?.heapLimitBytes)}</td>
      <td class="num">{bytes(last?.rssBytes)}</td>
      <td>{samples === undefined ? '…' : dead ? <span class="muted">down</span> : <Sparkline samples={samples} />}</td>
    </tr>
  );
}

/** `env=prod service=checkout` → every pair must match; a bare word matches an id or any label value. */
function matches(t: Target, filter: string): boolean {
  return filter
    .split(/\s+/)
    .filter((w) => w !== '')
    .every((w) => {
      const eq = w.indexOf('=');
      if (eq < 0) return t.id.includes(w) || Object.values(t.labels ?? {}).some((v) => v.includes(w));
      return t.labels?.[w.slice(0, eq)] === w.slice(eq + 1);
    });
}

/**
 * Rows on one page: a page bounds the DOM (bench/console.ts) and the one
 * request for its rows' samples (GET /v1/targets/samples/latest, one Redis
 * round trip for the page; it was one request per row, 50 a page against
 * HEAPCAP_RATE_LIMIT's 600 a minute).
 */
const PAGE_SIZE = 50;
/** The sparkline's points: the newest this many samples of the last hour (an hour at the default 1 min interval). */
const SPARK_POINTS = 60;
/** How often the page's numbers are read again: a target that dies shows as unreachable without a reload. */
const REFRESH_MS = 3_000;

export function TargetsView() {
  const targets = useLoad(() => api<{ items: { target: Target }[] }>('GET', '/v1/targets'), []);
  const [filter, setFilter] = useState('');
  const [page, setPage] = useState(0);
  // 10,000 targets: filtered once per keystroke, not again when only the page changes.
  const matching = useMemo(() => (targets.data?.items ?? []).map((i) => i.target).filter((t) => matches(t, filter)), [targets.data, filter]);
  const pages = Math.max(1, Math.ceil(matching.length / PAGE_SIZE));
  const at = Math.min(page, pages - 1);
  const shown = matching.slice(at * PAGE_SIZE, (at + 1) * PAGE_SIZE);
  const ids = shown.map((t) => t.id).join(',');
  const latest = useLoad(
    () => (ids === '' ? Promise.resolve({ items: [] }) : api<{ items: { targetId: string; samples: Sample[]; down: TargetDown | null }[] }>('GET', `/v1/targets/samples/latest${query({ ids, points: SPARK_POINTS })}`)),
    [ids],
  );
  useInterval(latest.reload, REFRESH_MS, ids !== '' && !latest.loading);
  // Keyed by the ids asked for: the previous page's answer is not shown against this page's rows.
  const samples = useMemo(() => new Map((latest.data?.items ?? []).map((i) => [i.targetId, i.samples])), [latest.data]);
  const downs = useMemo(() => new Map((latest.data?.items ?? []).map((i) => [i.targetId, i.down])), [latest.data]);
  return (
    <section>
      <h1>Targets</h1>
      <p>
        <label>
          Filter by label{' '}
          <input
            value={filter}
            onInput={(e) => {
              setFilter(e.currentTarget.value);
              setPage(0);
            }}
            placeholder="env=prod service=checkout"
          />
        </label>
      </p>
      <ErrorNote error={targets.error ?? latest.error} />
      <table class="grid" data-testid="targets">
        <thead>
          <tr>
            <th scope="col">Target</th>
            <th scope="col">Kind</th>
            <th scope="col">Labels</th>
            <th scope="col">Status</th>
            <th scope="col">Heap used</th>
            <th scope="col">Heap limit</th>
            <th scope="col">RSS</th>
            <th scope="col">Recent</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((t) => (
            <TargetRow key={t.id} target={t} samples={samples.get(t.id)} down={downs.get(t.id)} />
          ))}
        </tbody>
      </table>
      {targets.data !== undefined && shown.length === 0 && <p class="muted">No target matches.</p>}
      {matching.length > PAGE_SIZE && (
        <nav class="toolbar" aria-label="Target pages">
          <button type="button" disabled={at === 0} onClick={() => setPage(at - 1)}>
            Previous
          </button>
          <span data-testid="targets-page">
            {at * PAGE_SIZE + 1}–{at * PAGE_SIZE + shown.length} of {matching.length}
          </span>
          <button type="button" data-testid="targets-next" disabled={at >= pages - 1} onClick={() => setPage(at + 1)}>
            Next
          </button>
        </nav>
      )}
    </section>
  );
}
