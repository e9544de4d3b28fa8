/**
 * Schedules: every schedule with what it captures, when, and its next three
 * runs (the API computes them from the job scheduler); with captures:write a
 * form to create one (the API's validation messages shown at their field) and
 * pause / resume / delete. Whether the caller may change another owner's
 * schedule is the API's call (targets:admin): its refusal is shown as is.
 */
import { useState } from 'preact/hooks';
import { api, type ScheduleView } from '../api.ts';
import { time } from '../format.ts';
import { useLoad } from '../hooks.ts';
import { href } from '../router.ts';
import { useCan } from '../session.tsx';
import { FormIssues, RowActions, useActions, useCreateForm } from './form.tsx';
import { ErrorNote, StatusBadge } from './parts.tsx';

type Field = 'id' | 'target' | 'selector' | 'every' | 'cron' | 'timezone';
const FIELDS: readonly Field[] = ['id', 'target', 'selector', 'every', 'cron', 'timezone'];

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
  const [timing, setTiming] = useState<'every' | 'cron'>('every');
  const { failure, busy, submit, input, targetOrLabels } = useCreateForm<Field>({
    path: '/v1/schedules',
    prefix: 'schedule',
    initial: { id: '', target: '', selector: '', every: '15m', cron: '', timezone: '' },
    body: (v) => {
      if (timing === 'every') return { every: v.every.trim() };
      return { cron: v.cron.trim(), ...(v.timezone.trim() === '' ? {} : { timezone: v.timezone.trim() }) };
    },
    onCreated,
  });
  return (
    <form class="schedule-form" data-testid="schedule-form" onSubmit={(e) => void submit(e)}>
      <h2>New schedule</h2>
      {/* Messages for fields the form has no input for (options, retention…) go above it. */}
      <FormIssues failure={failure} fields={FIELDS} />
      {input('id', 'Id (optional)', { placeholder: 'checkout-30m' })}
      {targetOrLabels('Captures')}
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
  const { failure, act } = useActions(list.reload);
  const items = list.data?.items ?? [];
  return (
    <section>
      <h1>Schedules</h1>
      <ErrorNote error={failure ?? list.error} />
      <table class="grid" data-testid="schedules" aria-busy={list.loading ? 'true' : undefined}>
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
                  <RowActions what={`schedule ${v.schedule.id}`} path={`/v1/schedules/${id}`} active={v.state === 'active'} act={act} />
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
