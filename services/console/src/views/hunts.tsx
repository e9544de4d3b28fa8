/**
 * Leak hunts: the list (target, status, started, progress), a create form for
 * tokens with captures:write (the API's validation messages at their field;
 * the `drive` part only for targets:admin, which the API requires for it),
 * and a hunt's page, polled every second while it runs like a capture's, with
 * its result: the suspects and the classes created between the first two
 * snapshots that still live in the third.
 *
 * A hunt's three snapshots are the worker's scratch files, not captures: the
 * page links to the target and its captures, and says so, rather than to a
 * compare of snapshots that were never stored.
 */
import { useState } from 'preact/hooks';
import { api, query, type HuntStatus, type LeakHuntRecord, type LeakHuntReport } from '../api.ts';
import { bytes, ms, time } from '../format.ts';
import { useInterval, useLoad } from '../hooks.ts';
import { go, href } from '../router.ts';
import { useCan } from '../session.tsx';
import { FormIssues, useCreateForm } from './form.tsx';
import { ErrorFact, ErrorNote, StatusBadge } from './parts.tsx';
import { RetainerPath, SuspectList } from './suspects.tsx';

const LIVE = new Set<HuntStatus>(['queued', 'running']);
/** The worker's steps in order (`drive` only with a drive): the page marks the current one. */
const STEPS = ['lock', 'baseline', 'drive', 'wait', 'target', 'wait-final', 'final', 'report'];

type Field = 'id' | 'target' | 'selector' | 'interval' | 'reason' | 'drive.http.method' | 'drive.http.url' | 'drive.http.count' | 'drive.evaluate';
const FIELDS: readonly string[] = ['target', 'interval', 'reason', 'drive'];
type Drive = 'none' | 'http' | 'evaluate';

/** "2/3 snapshots, wait-final" while it runs; what it found once it succeeded. */
function progress(h: LeakHuntRecord): string {
  if (h.status === 'succeeded') {
    const classes = h.classes ?? [];
    const top = classes.slice(0, 3).map((c) => `${c.name} ${c.count.toLocaleString('en')}`);
    // Largest self size first; the suspects (owners ranked) are on the hunt's page.
    return top.length === 0 ? 'nothing survived' : `${top.join(', ')}${classes.length > 3 ? ` and ${classes.length - 3} more classes` : ''}`;
  }
  if (h.status === 'failed') return h.error === undefined ? 'failed' : `${h.error.code}${h.phase === null ? '' : ` in ${h.phase}`}`;
  return `${h.snapshots.length}/3 snapshots${h.phase === null ? '' : `, ${h.phase}`}`;
}

function driveBody(drive: Drive, v: Record<Field, string>): Record<string, unknown> | undefined {
  if (drive === 'evaluate') return { evaluate: v['drive.evaluate'] };
  if (drive === 'http') return { http: { method: v['drive.http.method'], url: v['drive.http.url'].trim(), count: Number(v['drive.http.count']) } };
  return undefined;
}

function CreateHunt({ target }: { target: string }) {
  const canDrive = useCan('targets:admin');
  const [drive, setDrive] = useState<Drive>('none');
  // On by default, as POST /v1/leak-hunts: off sends `allocations: false` (heapcap hunt --no-allocations).
  const [allocations, setAllocations] = useState(true);
  const { failure, busy, submit, input, targetSelect, values, setValues } = useCreateForm<Field>({
    path: '/v1/leak-hunts',
    prefix: 'hunt',
    initial: { id: '', target, selector: '', interval: '30', reason: '', 'drive.http.method': 'GET', 'drive.http.url': '', 'drive.http.count': '100', 'drive.evaluate': '' },
    // Numbers go as typed: the API says at the field what is wrong with them.
    body: (v) => ({ interval: v.interval.trim() === '' ? null : Number(v.interval), reason: v.reason.trim() === '' ? undefined : v.reason, drive: driveBody(drive, v), ...(allocations ? {} : { allocations: false }) }),
    onCreated: (created) => go(href('hunts', (created as { hunt: LeakHuntRecord }).hunt.id)),
  });
  const driveMessages = failure?.fields.filter((i) => i.path === 'drive').map((i) => i.message) ?? [];
  return (
    <form class="schedule-form" data-testid="hunt-form" onSubmit={(e) => void submit(e)}>
      <h2>New leak hunt</h2>
      <p class="muted">Three snapshots of one target an interval apart; the result names what was created between the first two and still lives in the third. The target is locked for the whole hunt.</p>
      <FormIssues failure={failure} fields={FIELDS} />
      {targetSelect()}
      {input('interval', 'Interval (seconds between snapshots, 1–3600)', { inputmode: 'numeric' })}
      {input('reason', 'Why (optional)', { placeholder: 'heap grows after deploy' })}
      <label>
        <input type="checkbox" id="hunt-allocations" checked={allocations} onChange={(e) => setAllocations(e.currentTarget.checked)} /> Track allocations until the target snapshot: the suspects then say where they were allocated, and a busy target slows meanwhile
      </label>
      {canDrive && (
        <fieldset>
          <legend>Drive the target after the baseline (optional)</legend>
          {(['none', 'http', 'evaluate'] as const).map((d) => (
            <label key={d}>
              <input type="radio" name="drive" value={d} checked={drive === d} onChange={() => setDrive(d)} /> {d === 'none' ? 'no' : d === 'http' ? 'HTTP requests to the target\'s own host' : 'evaluate an expression in it'}
            </label>
          ))}
          {drive === 'http' && (
            <>
              <div class="field">
                <label for="hunt-drive-http-method">Method</label>
                <select id="hunt-drive-http-method" value={values['drive.http.method']} onChange={(e) => {
                    const method = e.currentTarget.value;
                    setValues((v) => ({ ...v, 'drive.http.method': method }));
                  }}>
                  {['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((m) => (
                    <option key={m}>{m}</option>
                  ))}
                </select>
              </div>
              {input('drive.http.url', 'URL', { placeholder: 'http://127.0.0.1:3000/orders' })}
              {input('drive.http.count', 'Requests', { inputmode: 'numeric' })}
            </>
          )}
          {drive === 'evaluate' && input('drive.evaluate', 'Expression (promises awaited, 30 s deadline)')}
          {driveMessages.length > 0 && (
            <span class="error" data-field-error="drive">
              {driveMessages.join('; ')}
            </span>
          )}
        </fieldset>
      )}
      <button type="submit" class="primary" disabled={busy} data-testid="create-hunt">
        Start hunt
      </button>
    </form>
  );
}

export function HuntsView({ params }: { params: URLSearchParams }) {
  const target = params.get('target') ?? '';
  const list = useLoad(() => api<{ items: LeakHuntRecord[] }>('GET', `/v1/leak-hunts${query({ target, limit: 50 })}`), [target]);
  const items = list.data?.items ?? [];
  // The list follows hunts that are still running, as their pages do.
  useInterval(list.reload, 2000, items.some((h) => LIVE.has(h.status)));
  const canCreate = useCan('captures:write');
  return (
    <section>
      <h1>Leak hunts{target !== '' && <> of <code>{target}</code></>}</h1>
      {target !== '' && <p><a href={href('hunts')}>Every target's hunts</a></p>}
      <ErrorNote error={list.error} />
      <table class="grid" data-testid="hunts" aria-busy={list.loading ? 'true' : undefined}>
        <thead>
          <tr>
            <th scope="col">Hunt</th>
            <th scope="col">Target</th>
            <th scope="col">Status</th>
            <th scope="col">Started</th>
            <th scope="col">Interval</th>
            <th scope="col">Progress / found</th>
            <th scope="col">By</th>
          </tr>
        </thead>
        <tbody>
          {items.map((h) => (
            <tr key={h.id} data-hunt={h.id}>
              <td>
                <a href={href('hunts', h.id)}>{h.id}</a>
              </td>
              <td>
                <a href={href('targets', h.targetId)}>{h.targetId}</a>
              </td>
              <td>
                <StatusBadge status={h.status} />
              </td>
              <td>{time(h.startedAt ?? h.createdAt)}</td>
              <td class="num">{ms(h.intervalMs)}</td>
              <td>{progress(h)}</td>
              <td>{h.requestedBy}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.data !== undefined && items.length === 0 && <p class="muted">No leak hunts in the last 30 days.</p>}
      {canCreate && <CreateHunt key={target} target={target} />}
    </section>
  );
}

function Steps({ hunt }: { hunt: LeakHuntRecord }) {
  const steps = STEPS.filter((s) => s !== 'drive' || hunt.drive !== undefined);
  const at = hunt.phase === null ? (hunt.status === 'succeeded' ? steps.length : -1) : steps.indexOf(hunt.phase);
  return (
    <ol class="steps" data-testid="hunt-steps">
      {steps.map((s, i) => {
        const shot = hunt.snapshots.find((x) => x.name === s);
        const state = i < at || shot !== undefined ? 'done' : i === at && LIVE.has(hunt.status) ? 'current' : 'todo';
        return (
          <li key={s} data-step={s} data-state={state} aria-current={state === 'current' ? 'step' : undefined}>
            {s}
            {shot !== undefined && <span class="muted"> ({bytes(shot.bytes)}, {time(shot.at)})</span>}
          </li>
        );
      })}
    </ol>
  );
}

function Report({ report }: { report: LeakHuntReport }) {
  return (
    <>
      <p data-testid="hunt-summary">
        {report.createdCount.toLocaleString('en')} objects created between baseline and target; {report.survivingCount.toLocaleString('en')} of them ({bytes(report.survivingSelfSize)}) still alive in final.
      </p>
      {report.suspects !== undefined && (
        <>
          <h2>Suspects</h2>
          <SuspectList suspects={report.suspects.suspects} reasons={true} small={report.suspects.small} />
          {report.note !== undefined && (
            <p class="muted" data-testid="hunt-note">
              {report.note}
            </p>
          )}
        </>
      )}
      <h2>Classes that survived</h2>
      <table class="grid" data-testid="hunt-classes">
        <thead>
          <tr>
            <th scope="col">Class</th>
            <th scope="col">New and alive</th>
            <th scope="col">Self size</th>
            <th scope="col">Largest retains</th>
            <th scope="col">Its retainer path</th>
          </tr>
        </thead>
        <tbody>
          {report.classes.map((c) => (
            <tr key={c.name} data-class={c.name}>
              <td>
                <code>{c.name}</code>
              </td>
              <td class="num">{c.count.toLocaleString('en')}</td>
              <td class="num">{bytes(c.selfSize)}</td>
              <td class="num">{bytes(c.representative.retainedSize)}</td>
              <td>{c.representative.path === null ? <span class="muted">no path</span> : <RetainerPath path={c.representative.path} />}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {report.classes.length === 0 && <p class="muted">Nothing created between the first two snapshots is alive in the third.</p>}
    </>
  );
}

export function HuntView({ id }: { id: string }) {
  const loaded = useLoad(() => api<{ hunt: LeakHuntRecord; report: LeakHuntReport | null }>('GET', `/v1/leak-hunts/${encodeURIComponent(id)}`), [id]);
  const h = loaded.data?.hunt;
  const report = loaded.data?.report ?? null;
  useInterval(loaded.reload, 1000, h !== undefined && LIVE.has(h.status));
  if (h === undefined) return <ErrorNote error={loaded.error} />;
  const captures = `${href('captures')}?target=${encodeURIComponent(h.targetId)}`;
  return (
    <section>
      <h1>
        Leak hunt <code>{h.id}</code> <StatusBadge status={h.status} />
      </h1>
      <ErrorNote error={loaded.error} />
      <dl class="facts">
        <dt>Target</dt>
        <dd>
          <a href={href('targets', h.targetId)}>{h.targetId}</a> (<a href={captures}>its captures</a>, <a href={`${href('hunts')}?target=${encodeURIComponent(h.targetId)}`}>its hunts</a>)
        </dd>
        <dt>Phase</dt>
        <dd data-testid="hunt-phase" data-phase={h.phase ?? ''}>
          {h.phase ?? '–'}
        </dd>
        <dt>Interval</dt>
        <dd>{ms(h.intervalMs)} between snapshots</dd>
        {/* Absent on hunts from before the record said it. */}
        {h.allocations !== undefined && (
          <>
            <dt>Allocations</dt>
            <dd data-testid="hunt-allocations">{h.allocations ? 'tracked from the baseline to the target snapshot' : 'not tracked (allocations: false)'}</dd>
          </>
        )}
        <dt>By</dt>
        <dd>
          <strong>{h.requestedBy}</strong>
          {h.reason !== undefined && `: ${h.reason}`}
        </dd>
        {h.drive !== undefined && (
          <>
            <dt>Drive</dt>
            <dd>{h.drive.kind === 'http' ? `${h.drive.count} × ${h.drive.method} ${h.drive.url}` : `an expression of ${h.drive.chars} characters`}</dd>
          </>
        )}
        <dt>Created</dt>
        <dd>{time(h.createdAt)}</dd>
        <dt>Finished</dt>
        <dd>{time(h.finishedAt)}</dd>
        {h.error !== undefined && <ErrorFact error={h.error} />}
      </dl>
      <h2>Progress</h2>
      <Steps hunt={h} />
      {report !== null && <Report report={report} />}
      <p class="muted">The hunt's three snapshots are the worker's working files, not captures: to keep a pair to compare, take captures of the target (Capture now on its page) before and after.</p>
    </section>
  );
}
