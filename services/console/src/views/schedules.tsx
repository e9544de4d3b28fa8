/**
 * Schedules: every schedule with what it captures, when, and its next three
 * runs (the API computes them from the job scheduler); with captures:write a
 * form to create one (the API's validation messages shown at their field) and
 * pause / resume / delete. Whether the caller may change another owner's
 * schedule is the API's call (targets:admin): its refusal is shown as is.
 */
import { useState } from 'preact/hooks';
import { api, asFailure, type ApiFailure, type ScheduleView, type Target } from '../api.ts';
import { time } from '../format.ts';
import { useLoad } from '../hooks.ts';
import { href } from '../router.ts';
import { useCan } from '../session.tsx';
import { ErrorNote, StatusBadge } from './parts.tsx';

type Field = 'id' | 'target' | 'selector' | 'every' | 'cron' | 'timezone';
const FIELDS: readonly Field[] = ['id', 'target', 'selector', 'every', 'cron', 'timezone'];

/** "service=checkout, env=prod" → {service: "checkout", env: "prod"}; a part without "=" is kept for the API to refuse. */
function parseSelector(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(',').map((p) => p.trim()).filter((p) => p !== '')) {
    const eq = part.indexOf('=');
    out[eq < 0 ? part : part.slice(0, eq).trim()] = eq < 0 ? '' : part.slice(eq + 1).trim();
  }
  return out;
}

function what(s: ScheduleView['schedule']): string {
  if (s.target !== undefined) return s.target;
  return Object.entries(s.selector ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
}

function when(s: ScheduleView['schedule']): string {
  if (s.every !== undefined) return `every ${s.every}`;
  return `cron ${s.cron ?? ''}${s.timezone === undefined ? '' : ` (${s.timezone})`}`;
}

/** The create form: the API validates; its field messages land under their inputs. */
function CreateSchedule({ onCreated }: { onCreated: () => void }) {
  const targets = useLoad(() => api<{ items: { target: Target }[] }>('GET', '/v1/targets'), []);
  const [by, setBy] = useState<'target' | 'selector'>('target');
  const [timing, setTiming] = useState<'every' | 'cron'>('every');
  const [values, setValues] = useState<Record<Field, string>>({ id: '', target: '', selector: '', every: '15m', cron: '', timezone: '' });
  const [failure, setFailure] = useState<ApiFailure | undefined>();
  const [busy, setBusy] = useState(false);
  const set = (f: Field) => (e: Event) => setValues({ ...values, [f]: (e.currentTarget as HTMLInputElement).value });
  const issues = (f: Field): string[] => failure?.fields.filter((i) => i.path === f || i.path.startsWith(`${f}.`)).map((i) => i.message) ?? [];
  // Messages for fields the form has no input for (options, retention…) go above it.
  const elsewhere = failure?.fields.filter((i) => !FIELDS.some((f) => i.path === f || i.path.startsWith(`${f}.`))) ?? [];
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setFailure(undefined);
    const body: Record<string, unknown> = {};
    if (values.id.trim() !== '') body['id'] = values.id.trim();
    if (by === 'target') body['target'] = values.target;
    else body['selector'] = parseSelector(values.selector);
    if (timing === 'every') body['every'] = values.every.trim();
    else {
      body['cron'] = values.cron.trim();
      if (values.timezone.trim() !== '') body['timezone'] = values.timezone.trim();
    }
    try {
      await api('POST', '/v1/schedules', body);
      setValues({ ...values, id: '' });
      onCreated();
    } catch (err) {
      setFailure(asFailure(err));
    } finally {
      setBusy(false);
    }
  };
  const input = (f: Field, label: string, extra: Record<string, string> = {}) => {
    const msgs = issues(f);
    return (
      <div class="field">
        <label for={`schedule-${f}`}>{label}</label>
        <input id={`schedule-${f}`} name={f} value={values[f]} onInput={set(f)} aria-invalid={msgs.length > 0 ? 'true' : undefined} aria-describedby={msgs.length > 0 ? `schedule-${f}-error` : undefined} {...extra} />
        {msgs.length > 0 && (
          <span class="error" id={`schedule-${f}-error`} data-field-error={f}>
            {msgs.join('; ')}
          </span>
        )}
      </div>
    );
  };
  const targetMsgs = issues('target');
  return (
    <form class="schedule-form" data-testid="schedule-form" onSubmit={(e) => void submit(e)}>
      <h2>New schedule</h2>
      {failure !== undefined && failure.code !== 'validation_failed' && <ErrorNote error={failure} />}
      {elsewhere.length > 0 && (
        <p class="error" role="alert">
          {elsewhere.map((i) => `${i.path}: ${i.message}`).join('; ')}
        </p>
      )}
      {input('id', 'Id (optional)', { placeholder: 'checkout-30m' })}
      <fieldset>
        <legend>Captures</legend>
        <label>
          <input type="radio" name="by" checked={by === 'target'} onChange={() => setBy('target')} /> one target
        </label>{' '}
        <label>
          <input type="radio" name="by" checked={by === 'selector'} onChange={() => setBy('selector')} /> every target with labels
        </label>
        {by === 'target' ? (
          <div class="field">
            <label for="schedule-target">Target</label>
            <select id="schedule-target" name="target" value={values.target} onChange={set('target')} aria-invalid={targetMsgs.length > 0 ? 'true' : undefined}>
              <option value="">choose…</option>
              {(targets.data?.items ?? []).map(({ target }) => (
                <option key={target.id} value={target.id}>
                  {target.id}
                </option>
              ))}
            </select>
            {targetMsgs.length > 0 && (
              <span class="error" data-field-error="target">
                {targetMsgs.join('; ')}
              </span>
            )}
          </div>
        ) : (
          input('selector', 'Labels', { placeholder: 'service=checkout, env=prod' })
        )}
      </fieldset>
      <fieldset>
        <legend>When</legend>
        <label>
          <input type="radio" name="timing" checked={timing === 'every'} onChange={() => setTiming('every')} /> at an interval
        </label>{' '}
        <label>
          <input type="radio" name="timing" checked={timing === 'cron'} onChange={() => setTiming('cron')} /> cron
        </label>
        {timing === 'every' ? (
          input('every', 'Every', { placeholder: '15m, 6h, 1d' })
        ) : (
          <>
            {input('cron', 'Cron (5 fields)', { placeholder: '*/30 * * * *' })}
            {input('timezone', 'Time zone (default UTC)', { placeholder: 'Europe/Berlin' })}
          </>
        )}
      </fieldset>
      <button type="submit" class="primary" disabled={busy} data-testid="create-schedule">
        Create schedule
      </button>
    </form>
  );
}

export function SchedulesView() {
  const list = useLoad(() => api<{ items: ScheduleView[] }>('GET', '/v1/schedules'), []);
  const canWrite = useCan('captures:write');
  const [failure, setFailure] = useState<ApiFailure | undefined>();
  const act = async (path: string, method = 'POST'): Promise<void> => {
    setFailure(undefined);
    try {
      await api(method, path);
      list.reload();
    } catch (err) {
      setFailure(asFailure(err));
    }
  };
  const items = list.data?.items ?? [];
  return (
    <section>
      <h1>Schedules</h1>
      <ErrorNote error={failure ?? list.error} />
      <table class="grid" data-testid="schedules">
        <thead>
          <tr>
            <th scope="col">Schedule</th>
            <th scope="col">Captures</th>
            <th scope="col">When</th>
            <th scope="col">State</th>
            <th scope="col">Next runs</th>
            <th scope="col">Last capture</th>
            <th scope="col">Owner</th>
            {canWrite && <th scope="col">Actions</th>}
          </tr>
        </thead>
        <tbody>
          {items.map((v) => {
            const id = encodeURIComponent(v.schedule.id);
            return (
              <tr key={v.schedule.id} data-schedule={v.schedule.id}>
                <td>{v.schedule.id}</td>
                <td>
                  {v.schedule.target !== undefined ? <a href={href('targets', v.schedule.target)}>{v.schedule.target}</a> : what(v.schedule)}{' '}
                  <span class="muted">({v.matches} now)</span>
                </td>
                <td>{when(v.schedule)}</td>
                <td>{v.state}</td>
                <td>
                  <ol class="next-runs" data-testid="next-runs">
                    {v.nextRunAt.map((t) => (
                      <li key={t}>
                        <time dateTime={t}>{time(t)}</time>
                      </li>
                    ))}
                  </ol>
                  {v.nextRunAt.length === 0 && <span class="muted">none while paused</span>}
                </td>
                <td>
                  {v.lastCapture === null ? (
                    <span class="muted">none yet</span>
                  ) : (
                    <>
                      <a href={href('captures', v.lastCapture.id)}>{v.lastCapture.id}</a> {v.lastCapture.status !== null && <StatusBadge status={v.lastCapture.status} />}
                    </>
                  )}
                </td>
                <td>{v.schedule.owner}</td>
                {canWrite && (
                  <td class="actions">
                    <button type="button" data-action={v.state === 'active' ? 'pause' : 'resume'} onClick={() => void act(`/v1/schedules/${id}/${v.state === 'active' ? 'pause' : 'resume'}`)}>
                      {v.state === 'active' ? 'Pause' : 'Resume'}
                    </button>{' '}
                    <button type="button" data-action="delete" onClick={() => confirm(`Delete schedule ${v.schedule.id}?`) && void act(`/v1/schedules/${id}`, 'DELETE')}>
                      Delete
                    </button>
                  </td>
                )}
              </tr>
            );
          })}
        </tbody>
      </table>
      {list.data !== undefined && items.length === 0 && <p class="muted">No schedules yet.</p>}
      {canWrite && <CreateSchedule onCreated={list.reload} />}
    </section>
  );
}
