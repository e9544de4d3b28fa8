/**
 * Compare two captures of one target: the diff's suspects first (owners of new
 * memory, docs/analysis.md), then every class, sortable by its deltas. Without
 * both captures' retained-size analyses the suspects come from class counts
 * only; "Analyse both" asks for them and the view polls until they are done.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api, query, type ApiFailure, type ClassDelta, type DiffSideRef, type DiffView, type SiteDelta, type SnapshotDiffView, type Suspect } from '../api.ts';
import { bytes, signed } from '../format.ts';
import { useInterval, useLoad } from '../hooks.ts';
import { href } from '../router.ts';
import { useCan } from '../session.tsx';
import { ErrorNote } from './parts.tsx';
import { SuspectList } from './suspects.tsx';
import { ProfileFlame } from '../flame/profile-views.tsx';
import { BesideProfilesLink } from './capture-links.tsx';

type SortKey = 'rank' | 'name' | 'countDelta' | 'selfSizeDelta' | 'retainedSizeDelta';

/** One side's analysis in words: what stands between this diff and holders. */
function sideText(role: string, s: DiffSideRef): string {
  const a = s.analysis;
  if (a.status === 'failed') return `the ${role}'s analysis failed${a.error === undefined ? '' : ` (${a.error})`}`;
  if (a.status === 'succeeded') return `the ${role}'s analysis predates suspects`;
  if (a.status === 'none') return `the ${role} has no analysis`;
  return `the ${role}'s analysis is ${a.status}`;
}

/**
 * The one note above summary-only suspects: they rank classes by growth, and
 * what gets holders (the button when the token may ask for analyses, who may
 * otherwise). The API's own note (with its endpoints) is for curl users.
 */
function SummaryNote({ view, analysing, onAnalyse }: { view: DiffView; analysing: boolean; onAnalyse: (() => void) | null }) {
  const sides = needAnalysis(view);
  const why = sides.map(([role, s]) => sideText(role, s)).join(', ');
  return (
    <p class="note" data-testid="suspects-note">
      Ranked by class growth only: the objects holding them, their retainer paths and retained sizes need an analysis of both captures ({why}).{' '}
      {analysing ? (
        <span role="status">Analysing… this page updates when they are done.</span>
      ) : onAnalyse !== null ? (
        <button type="button" class="primary" data-testid="analyse-both" onClick={onAnalyse}>
          {sides.length === 2 ? 'Analyse both' : `Analyse the ${sides[0]![0]}`}
        </button>
      ) : (
        <span>A token with captures:write can start them.</span>
      )}
    </p>
  );
}

/**
 * The sides whose analysis stands between this diff and holders: those not
 * analysed, or (when both were, before suspects existed) both again.
 */
function needAnalysis(view: DiffView): ['base' | 'head', DiffSideRef][] {
  const both: ['base' | 'head', DiffSideRef][] = [
    ['base', view.base],
    ['head', view.head],
  ];
  const missing = both.filter(([, s]) => s.analysis.status !== 'succeeded');
  return missing.length === 0 ? both : missing;
}

function Suspects({ view, note }: { view: SnapshotDiffView; note: ComponentChildren }) {
  const { mode, suspects, small } = view.diff.suspects;
  return (
    <>
      <h2>Suspects</h2>
      {mode === 'graph' ? <p class="muted">From both snapshots’ dominator trees: holders and retainer paths known.</p> : note}
      <SuspectList suspects={suspects} reasons={mode === 'graph'} small={small} />
    </>
  );
}

/**
 * Every class, by default in the suspects' order (their rank), then the rest
 * by how much they grew (retained when known, else self size): an on-call
 * engineer reads the table from the top and meets the suspects first, not
 * the engine's strings.
 */
function ClassTable({ classes, retained, suspects }: { classes: ClassDelta[]; retained: boolean; suspects: Suspect[] }) {
  const [key, setKey] = useState<SortKey>('rank');
  const [desc, setDesc] = useState(true);
  const [all, setAll] = useState(false);
  // A class can rank twice (held by two holders): its best rank counts.
  const rank = new Map([...suspects].reverse().map((s) => [s.class, s.rank]));
  const growth = (c: ClassDelta): number => (retained ? (c.retainedSizeDelta ?? 0) : c.selfSizeDelta);
  // Rank sorts suspects first (rank 1 first when "descending", the default), the rest by growth.
  const byRank = (a: ClassDelta, b: ClassDelta): number => (rank.get(b.name) ?? Infinity) - (rank.get(a.name) ?? Infinity) || growth(a) - growth(b);
  const value = (c: ClassDelta): number | string => (key === 'name' ? c.name : key === 'rank' ? 0 : (c[key] ?? 0));
  const sorted = classes
    .filter((c) => all || c.status !== 'unchanged')
    .sort((a, b) => {
      const [x, y] = [value(a), value(b)];
      const cmp = key === 'rank' ? byRank(a, b) : typeof x === 'string' ? x.localeCompare(String(y)) : x - (y as number);
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
            {header('rank', 'Suspect')}
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
            <tr key={c.name} data-class={c.name}>
              <td class="num">{rank.has(c.name) ? `#${rank.get(c.name)}` : ''}</td>
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

/** Two allocation sampling profiles: the sites whose live bytes grew most (docs/analysis.md, "Where it was allocated"). */
function AllocationGrowth({ sites }: { sites: SiteDelta[] }) {
  return (
    <>
      <h2>Allocation sites that grew</h2>
      {sites.length === 0 ? (
        <p class="muted">No allocation site grew.</p>
      ) : (
        <table class="grid" data-testid="grown-sites">
          <thead>
            <tr>
              <th>Growth</th>
              <th>Base</th>
              <th>Head</th>
              <th>Allocated at</th>
            </tr>
          </thead>
          <tbody>
            {sites.map((s) => (
              <tr key={`${s.functionName} ${s.url}:${s.line}:${s.column}`}>
                <td>{signed(s.bytesDelta, bytes)}</td>
                <td>{bytes(s.baseBytes)}</td>
                <td>{bytes(s.headBytes)}</td>
                <td>
                  <code>{s.functionName || '(anonymous)'}</code>{' '}
                  <code>
                    {s.url}
                    {s.line > 0 ? `:${s.line}:${s.column}` : ''}
                  </code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
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
  const analyse = async (view: DiffView): Promise<void> => {
    try {
      for (const [, s] of needAnalysis(view)) await api('POST', `/v1/captures/${s.captureId}/analysis`);
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
      {d?.allocations && d.diff === null && <AllocationGrowth sites={d.allocations.grown} />}
      {d?.allocations && d.diff === null && (
        <>
          <h2>Growth flame graph</h2>
          <ProfileFlame id={head} base={base} />
        </>
      )}
      {d !== undefined && d.diff !== null && (
        <>
          <p>
            {signed(d.diff.nodeCountDelta)} objects, {signed(d.diff.totalSelfSizeDelta, bytes)} self size.
          </p>
          <Suspects view={{ ...d, diff: d.diff }} note={<SummaryNote view={d} analysing={analysing} onAnalyse={canAnalyse ? () => void analyse(d) : null} />} />
          {d.allocations && (
            <>
              <AllocationGrowth sites={d.allocations.grown} />
              <BesideProfilesLink base={base} head={head} />
            </>
          )}
          <h2>Every class</h2>
          <ClassTable classes={d.diff.classes} retained={d.diff.retained} suspects={d.diff.suspects.suspects} />
          {d.omittedClasses > 0 && <p class="muted">{d.omittedClasses} smaller classes left out.</p>}
        </>
      )}
    </section>
  );
}
