/**
 * A capture: its status live (polled every second while queued or running: a
 * capture lasts seconds to minutes and one small GET a second per open page
 * costs less than holding an SSE stream, which would need pub/sub fan-out,
 * proxies that do not buffer it and reconnect logic), the phase waterfall,
 * sizes, who and why, download, the summary's top classes and "compare with".
 */
import { useState } from 'preact/hooks';
import { api, query, type ApiFailure, type CaptureRecord, type ClassRow } from '../api.ts';
import { Waterfall } from '../components/waterfall.tsx';
import { bytes, time } from '../format.ts';
import { useInterval, useLoad } from '../hooks.ts';
import { go, href } from '../router.ts';
import { useCan } from '../session.tsx';
import { ErrorFact, ErrorNote, StatusBadge } from './parts.tsx';
import { GrowthSection } from './growth.tsx';
import { ProfileFlame } from '../flame/profile-views.tsx';
import { FailedAttempts, ProfileFacts } from './capture-links.tsx';

const LIVE = new Set(['queued', 'running']);

function TopClasses({ id }: { id: string }) {
  const summary = useLoad(() => api<{ summary: { classes: ClassRow[]; totalSelfSize: number; nodeCount: number } }>('GET', `/v1/captures/${id}/summary`), [id]);
  if (summary.error !== undefined) return <ErrorNote error={summary.error} />;
  const s = summary.data?.summary;
  if (s === undefined) return <p class="muted">Loading the summary…</p>;
  return (
    <>
      <p>
        {s.nodeCount.toLocaleString('en')} objects, {bytes(s.totalSelfSize)} self size in all.
      </p>
      <table class="grid" data-testid="top-classes">
        <thead>
          <tr>
            <th scope="col">Class</th>
            <th scope="col">Count</th>
            <th scope="col">Self size</th>
          </tr>
        </thead>
        <tbody>
          {s.classes.slice(0, 15).map((c) => (
            <tr key={c.name}>
              <td>
                <code>{c.name}</code>
              </td>
              <td class="num">{c.count.toLocaleString('en')}</td>
              <td class="num">{bytes(c.selfSize)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

function CompareWith({ capture }: { capture: CaptureRecord }) {
  const others = useLoad(() => api<{ items: CaptureRecord[] }>('GET', `/v1/captures${query({ target: capture.targetId, status: 'succeeded', limit: 50 })}`), [capture.targetId]);
  // A profile compares with profiles (growth by allocation site), a snapshot with snapshots.
  const profile = capture.artifact?.kind === 'sampling-profile';
  const items = (others.data?.items ?? []).filter((c) => c.id !== capture.id && (c.artifact?.kind === 'sampling-profile') === profile);
  if (items.length === 0) return <p class="muted">No other succeeded capture of {capture.targetId} to compare with.</p>;
  const open = (other: string): void => {
    const pair = [capture, items.find((c) => c.id === other)!].sort((a, b) => (a.createdAt < b.createdAt ? -1 : 1));
    go(`${href('compare')}?base=${pair[0]!.id}&head=${pair[1]!.id}`);
  };
  return (
    <label>
      Compare with{' '}
      <select data-testid="compare-with" onChange={(e) => e.currentTarget.value !== '' && open(e.currentTarget.value)}>
        <option value="">choose a capture…</option>
        {items.map((c) => (
          <option key={c.id} value={c.id}>
            {time(c.createdAt)} ({c.id})
          </option>
        ))}
      </select>
    </label>
  );
}

export function CaptureView({ id }: { id: string }) {
  const record = useLoad(() => api<{ capture: CaptureRecord }>('GET', `/v1/captures/${encodeURIComponent(id)}`), [id]);
  const c = record.data?.capture;
  useInterval(record.reload, 1000, c !== undefined && LIVE.has(c.status));
  const canRead = useCan('artifacts:read');
  const canWrite = useCan('captures:write');
  const [failure, setFailure] = useState<ApiFailure | undefined>();
  if (c === undefined) return <ErrorNote error={record.error} />;
  const snapshot = c.artifact !== null && c.artifact.kind !== 'sampling-profile';
  const cancel = async (): Promise<void> => {
    try {
      await api('DELETE', `/v1/captures/${c.id}`);
      record.reload();
    } catch (err) {
      setFailure(err as ApiFailure);
    }
  };
  return (
    <section>
      <h1>
        Capture <code>{c.id}</code> <StatusBadge status={c.status} />
      </h1>
      <ErrorNote error={failure} />
      <dl class="facts">
        <dt>Target</dt>
        <dd>
          <a href={href('targets', c.targetId)}>{c.targetId}</a>
        </dd>
        <dt>Phase</dt>
        <dd data-testid="phase">{c.phase ?? '–'}</dd>
        <dt>Trigger</dt>
        <dd>
          {c.trigger.kind} by <strong>{c.trigger.who}</strong>
          {c.trigger.from !== undefined && ` from ${c.trigger.from}`}
        </dd>
        <dt>Why</dt>
        <dd>{c.trigger.reason ?? '–'}</dd>
        <dt>Created</dt>
        <dd>{time(c.createdAt)}</dd>
        <dt>Finished</dt>
        <dd>{time(c.finishedAt)}</dd>
        <dt>Attempts</dt>
        <dd>
          {c.attempts}
          {c.worker !== undefined && ` (worker ${c.worker})`}
        </dd>
        {c.artifact !== null && (
          <>
            <dt>Size</dt>
            <dd>
              {bytes(c.artifact.bytesUncompressed)} ({bytes(c.artifact.bytesStored)} stored{c.artifact.gzip ? ', gzip' : ''})
            </dd>
            <dt>sha256</dt>
            <dd>
              <code>{c.artifact.sha256}</code>
            </dd>
          </>
        )}
        {c.redaction !== undefined && (
          <>
            <dt>Redaction</dt>
            <dd data-testid="redaction">
              {c.redaction.mode}
              {c.redaction.mode === 'strings' && ` (${c.redaction.redactedStrings ?? 0} string values replaced${c.redaction.rewrittenNames ? `, ${c.redaction.rewrittenNames} element names without attribute values` : ''})`}
            </dd>
          </>
        )}
        <ProfileFacts capture={c} />
        {c.error !== null && <ErrorFact error={c.error} />}
      </dl>
      <div class="toolbar">
        {canRead && c.status === 'succeeded' && (
          <a class="button" href={`/v1/captures/${c.id}/artifact?encoding=gzip`} download data-testid="download">
            Download
          </a>
        )}
        {canWrite && LIVE.has(c.status) && (
          <button type="button" onClick={() => void cancel()}>
            Cancel
          </button>
        )}
        {canRead && c.status === 'succeeded' && <CompareWith capture={c} />}
      </div>
      {c.failedAttempts !== undefined && c.failedAttempts.length > 0 && <FailedAttempts attempts={c.failedAttempts} />}
      {c.growth !== undefined && <GrowthSection growth={c.growth} />}
      <h2>Phases</h2>
      {c.timings === null ? <p class="muted">No phase has finished yet.</p> : <Waterfall timings={c.timings} running={LIVE.has(c.status) ? c.phase : null} />}
      {canRead && c.status === 'succeeded' && !snapshot && (
        <>
          <h2>Allocation profile</h2>
          <ProfileFlame id={c.id} />
        </>
      )}
      {canRead && c.status === 'succeeded' && snapshot && c.artifact?.summaryKey !== undefined && (
        <>
          <h2>Largest classes</h2>
          <TopClasses id={c.id} />
        </>
      )}
    </section>
  );
}
