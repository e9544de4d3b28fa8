/** Targets: every registered target, its labels, its latest heap numbers and a sparkline of the last hour. */
import { useState } from 'preact/hooks';
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

export function TargetsView() {
  const targets = useLoad(() => api<{ items: { target: Target }[] }>('GET', '/v1/targets'), []);
  const [filter, setFilter] = useState('');
  const shown = (targets.data?.items ?? []).map((i) => i.target).filter((t) => matches(t, filter));
  return (
    <section>
      <h1>Targets</h1>
      <p>
        <label>
          Filter by label{' '}
          <input value={filter} onInput={(e) => setFilter(e.currentTarget.value)} placeholder="env=prod service=checkout" />
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
    </section>
  );
}
