/**
 * Compare two captures of one target: the diff's suspects first (owners of new
 * memory, docs/analysis.md), then every class, sortable by its deltas. Without
 * both captures' retained-size analyses the suspects come from class counts
 * only; "Analyse both" asks for them and the view polls until they are done.
 */
import { useState } from 'preact/hooks';
import { api, query, type ApiFailure, type ClassDelta, type DiffView, type Suspect } from '../api.ts';
import { bytes, signed } from '../format.ts';
import { useInterval, useLoad } from '../hooks.ts';
import { href } from '../router.ts';
import { useCan } from '../session.tsx';
import { ErrorNote } from './parts.tsx';

type SortKey = 'name' | 'countDelta' | 'selfSizeDelta' | 'retainedSizeDelta';

function holderText(s: Suspect): string {
  if (s.holder === null) return '–';
  const edge = s.holder.edge === null ? '' : ` .${s.holder.edge}`;
  const via = s.holder.via === null ? '' : ` via ${s.holder.via}`;
  return `${s.holder.class}${edge}${via}`;
}

function Suspects({ view }: { view: DiffView }) {
  const { mode, note, suspects } = view.diff.suspects;
  return (
    <>
      <h2>Suspects</h2>
      <p class="muted">
        {mode === 'graph' ? 'From both snapshots\u2019 dominator trees: holders and retainer paths known.' : 'From class counts only (no holders).'} {note}
      </p>
      <ol class="suspects" data-testid="suspects">
        {suspects.map((s) => (
          <li key={s.rank} data-rank={s.rank} data-class={s.class}>
            <strong>
              <code>{s.class}</code>
            </strong>{' '}
            <span class="muted">({s.kind})</span> held by <code>{holderText(s)}</code>: {signed(s.countDelta)} objects, {signed(s.selfSizeDelta, bytes)} self
            {s.retainedSizeDelta !== undefined && `, ${signed(s.retainedSizeDelta, bytes)} retained`}
            <div>{s.reason}</div>
            {s.path !== null && s.path.length > 0 && (
              <div class="path">
                {s.path.map((p, i) => (
                  <span key={i}>
                    {i > 0 && ' → '}
                    {p.class}
                    {p.edge !== '' && <code>.{p.edge}</code>}
                  </span>
                ))}
              </div>
            )}
          </li>
        ))}
      </ol>
      {suspects.length === 0 && <p class="muted">Nothing grew.</p>}
    </>
  );
}

function ClassTable({ classes, retained }: { classes: ClassDelta[]; retained: boolean }) {
  const [key, setKey] = useState<SortKey>('selfSizeDelta');
  const [desc, setDesc] = useState(true);
  const [all, setAll] = useState(false);
  const value = (c: ClassDelta): number | string => (key === 'name' ? c.name : (c[key] ?? 0));
  const sorted = classes.filter((c) => all || c.status !== 'unchanged').sort((a, b) => {
    const [x, y] = [value(a), value(b)];
    const cmp = typeof x === 'string' ? x.localeCompare(String(y)) : x - (y as number);
    return desc ? -cmp : cmp;
  });
  const header = (k: SortKey, label: string) => (
    <th scope="col" aria-sort={key === k ? (desc ? 'descending' : 'ascending') : 'none'}>
      <button
        type="button"
        class="sort"
        data-sort={k}
        onClick={() => {
          setDesc(key === k ? !desc : true);
          setKey(k);
        }}
      >
        {label}
        {key === k ? (desc ? ' ▼' : ' ▲') : ''}
      </button>
    </th>
  );
  return (
    <>
    <label>
      <input type="checkbox" checked={all} onChange={(e) => setAll(e.currentTarget.checked)} /> Show unchanged classes
    </label>
    <table class="grid" data-testid="classes">
      <thead>
        <tr>
          {header('name', 'Class')}
          <th scope="col">Status</th>
          {header('countDelta', 'Count Δ')}
          {header('selfSizeDelta', 'Self size Δ')}
          {retained && header('retainedSizeDelta', 'Retained Δ')}
          <th scope="col">Count (base → head)</th>
        </tr>
      </thead>
      <tbody>
        {sorted.map((c) => (
          <tr key={c.name}>
            <td>
              <code>{c.name}</code>
            </td>
            <td>{c.status}</td>
            <td class="num">{signed(c.countDelta)}</td>
            <td class="num">{signed(c.selfSizeDelta, bytes)}</td>
            {retained && <td class="num">{signed(c.retainedSizeDelta, bytes)}</td>}
            <td class="num">
              {(c.base?.count ?? 0).toLocaleString('en')} → {(c.head?.count ?? 0).toLocaleString('en')}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
    </>
  );
}

export function CompareView({ params }: { params: URLSearchParams }) {
  const base = params.get('base') ?? '';
  const head = params.get('head') ?? '';
  const diff = useLoad(() => api<DiffView>('GET', `/v1/diff${query({ base, head, limit: 500 })}`), [base, head]);
  const canAnalyse = useCan('captures:write');
  const [failure, setFailure] = useState<ApiFailure | undefined>();
  const sides = diff.data === undefined ? [] : [diff.data.base, diff.data.head];
  const analysing = sides.some((s) => s.analysis.status === 'queued' || s.analysis.status === 'running');
  useInterval(diff.reload, 1000, analysing);
  if (base === '' || head === '') return <p>Open a capture and choose "Compare with…".</p>;
  const analyse = async (): Promise<void> => {
    try {
      for (const s of sides) if (s.analysis.status === 'none' || s.analysis.status === 'failed') await api('POST', `/v1/captures/${s.captureId}/analysis`);
      diff.reload();
    } catch (err) {
      setFailure(err as ApiFailure);
    }
  };
  const d = diff.data;
  return (
    <section>
      <h1>Compare</h1>
      <p>
        <a href={href('captures', base)}>{base}</a> (base) → <a href={href('captures', head)}>{head}</a> (head)
      </p>
      <ErrorNote error={failure ?? diff.error} />
      {d !== undefined && (
        <>
          <p>
            {signed(d.diff.nodeCountDelta)} objects, {signed(d.diff.totalSelfSizeDelta, bytes)} self size. Analyses: base {d.base.analysis.status}, head {d.head.analysis.status}.{' '}
            {canAnalyse && d.diff.suspects.mode === 'summary' && !analysing && (
              <button type="button" onClick={() => void analyse()}>
                Analyse both (holders and retained sizes)
              </button>
            )}
          </p>
          <Suspects view={d} />
          <h2>Every class</h2>
          <ClassTable classes={d.diff.classes} retained={d.diff.retained} />
          {d.omittedClasses > 0 && <p class="muted">{d.omittedClasses} smaller classes left out.</p>}
        </>
      )}
    </section>
  );
}
