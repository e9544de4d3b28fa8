/** Targets: every registered target, its labels, its latest heap numbers and a sparkline of the last hour. */
import { useMemo, useState } from 'preact/hooks';
import { api, query, type Samples, type Target } from '../api.ts';
import { Sparkline } from '../components/sparkline.tsx';
import { bytes } from '../format.ts';
import { useLoad } from '../hooks.ts';
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

function TargetRow({ target }: { target: Target }) {
  const samples = useLoad(() => api<Samples>('GET', `/v1/targets/${encodeURIComponent(target.id)}/samples${query({ limit: 360 })}`), [target.id]);
  const items = samples.data?.items ?? [];
  const last = items[items.length - 1];
  return (
    <tr data-target={target.id}>
      <td>
        <a href={href('targets', target.id)}>{target.id}</a>
      </td>
      <td>{target.kind}</td>
      <td>
        <Labels labels={target.labels} />
      </td>
      <td class="num">{bytes(last?.heapUsedBytes)}</td>
      <td class="num">{bytes(last?.heapLimitBytes)}</td>
      <td class="num">{bytes(last?.rssBytes)}</td>
      <td>{samples.loading && samples.data === undefined ? '…' : <Sparkline samples={items} />}</td>
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
 * Rows on one page. Each row loads its own samples: a page bounds those
 * requests (10,000 targets would be 10,000 requests and the API's rate limit,
 * HEAPCAP_RATE_LIMIT, is 600 a minute) and the DOM (bench/console.ts).
 */
const PAGE_SIZE = 50;

export function TargetsView() {
  const targets = useLoad(() => api<{ items: { target: Target }[] }>('GET', '/v1/targets'), []);
  const [filter, setFilter] = useState('');
  const [page, setPage] = useState(0);
  // 10,000 targets: filtered once per keystroke, not again when only the page changes.
  const matching = useMemo(() => (targets.data?.items ?? []).map((i) => i.target).filter((t) => matches(t, filter)), [targets.data, filter]);
  const pages = Math.max(1, Math.ceil(matching.length / PAGE_SIZE));
  const at = Math.min(page, pages - 1);
  const shown = matching.slice(at * PAGE_SIZE, (at + 1) * PAGE_SIZE);
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
      <ErrorNote error={targets.error} />
      <table class="grid" data-testid="targets">
        <thead>
          <tr>
            <th scope="col">Target</th>
            <th scope="col">Kind</th>
            <th scope="col">Labels</th>
            <th scope="col">Heap used</th>
            <th scope="col">Heap limit</th>
            <th scope="col">RSS</th>
            <th scope="col">Last hour</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((t) => (
            <TargetRow key={t.id} target={t} />
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
