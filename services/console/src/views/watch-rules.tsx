/**
 * Watch rules: every rule with its condition, its state for each target it
 * watches now (ok, pending, firing, cooling: the current episode) and its
 * recent firings (each target's last one, and the captures the rule made);
 * with targets:admin (what the API asks for any rule change) a form to create
 * one (the API's validation messages at their field) and pause / resume /
 * delete. Others see the list only.
 */
import { useState } from 'preact/hooks';
import { api, query, type CaptureRecord, type WatchRuleView } from '../api.ts';
import { bytes, time } from '../format.ts';
import { TargetHealth } from '../components/target-health.tsx';
import { useLoad } from '../hooks.ts';
import { href } from '../router.ts';
import { useCan } from '../session.tsx';
import { FormIssues, RowActions, useActions, useCreateForm } from './form.tsx';
import { ErrorNote, StatusBadge } from './parts.tsx';

const METRICS = ['heapUsedRatio', 'heapUsedBytes', 'rssBytes', 'heapGrowthBytes'] as const;
type Field = 'id' | 'target' | 'selector' | 'when.above' | 'when.forSeconds' | 'when.windowSeconds' | 'cooldownSeconds';
const FIELDS: readonly Field[] = ['id', 'target', 'selector', 'when.above', 'when.forSeconds', 'when.windowSeconds', 'cooldownSeconds'];

function condition(w: WatchRuleView['rule']['when']): string {
  const above = w.metric === 'heapUsedRatio' ? String(w.above) : bytes(w.above);
  return `${w.metric}${w.windowSeconds === undefined ? '' : ` over ${w.windowSeconds} s`} > ${above} for ${w.forSeconds} s`;
}

function value(metric: string, v: number | null): string {
  if (v === null) return '–';
  return metric === 'heapUsedRatio' ? v.toFixed(2) : bytes(v);
}

/** A number input's text as the API's JSON wants it: a number, or the text itself for the API to refuse. */
function num(text: string): number | string {
  const n = Number(text);
  return text.trim() !== '' && Number.isFinite(n) ? n : text;
}

function CreateRule({ onCreated }: { onCreated: () => void }) {
  const [metric, setMetric] = useState<string>('heapUsedRatio');
  const { failure, busy, submit, input, targetOrLabels } = useCreateForm<Field>({
    path: '/v1/watch-rules',
    prefix: 'rule',
    initial: { id: '', target: '', selector: '', 'when.above': '0.8', 'when.forSeconds': '120', 'when.windowSeconds': '', cooldownSeconds: '1800' },
    body: (v) => {
      const when: Record<string, unknown> = { metric, above: num(v['when.above']), forSeconds: num(v['when.forSeconds']) };
      if (metric === 'heapGrowthBytes' || v['when.windowSeconds'].trim() !== '') when['windowSeconds'] = num(v['when.windowSeconds']);
      return { when, ...(v.cooldownSeconds.trim() === '' ? {} : { cooldownSeconds: num(v.cooldownSeconds) }) };
    },
    onCreated,
  });
  return (
    <form class="schedule-form" data-testid="rule-form" onSubmit={(e) => void submit(e)}>
      <h2>New watch rule</h2>
      <FormIssues failure={failure} fields={FIELDS} />
      {input('id', 'Id (optional)', { placeholder: 'checkout-heap-80' })}
      {targetOrLabels('Watches')}
      <fieldset>
        <legend>Fires when</legend>
        <div class="field">
          <label for="rule-metric">Metric</label>
          <select id="rule-metric" name="metric" value={metric} onChange={(e) => setMetric(e.currentTarget.value)}>
            {METRICS.map((m) => (
              <option key={m}>{m}</option>
            ))}
          </select>
        </div>
        {input('when.above', metric === 'heapUsedRatio' ? 'Above (ratio 0–1)' : 'Above (bytes)')}
        {input('when.forSeconds', 'For (seconds)')}
        {metric === 'heapGrowthBytes' && input('when.windowSeconds', 'Growth window (seconds)')}
        {input('cooldownSeconds', 'Cooldown (seconds)')}
      </fieldset>
      <button type="submit" class="primary" disabled={busy} data-testid="create-rule">
        Create watch rule
      </button>
    </form>
  );
}

export function WatchRulesView() {
  const list = useLoad(() => api<{ items: WatchRuleView[] }>('GET', '/v1/watch-rules'), []);
  // The captures rules made (newest first): each row lists its own among them.
  const made = useLoad(() => api<{ items: CaptureRecord[] }>('GET', `/v1/captures${query({ trigger: 'watch', limit: 100 })}`), []);
  const canWrite = useCan('targets:admin');
  const { failure, act } = useActions(list.reload);
  const items = list.data?.items ?? [];
  return (
    <section>
      <h1>Watch rules</h1>
      <ErrorNote error={failure ?? list.error ?? made.error} />
      <table class="grid" data-testid="watch-rules" aria-busy={list.loading || made.loading ? 'true' : undefined}>
        <thead>
          <tr>
            <th scope="col">Rule</th>
            <th scope="col">Watches</th>
            <th scope="col">Fires when</th>
            <th scope="col">State</th>
            <th scope="col">Targets now (episode)</th>
            <th scope="col">Recent firings</th>
            <th scope="col">Owner</th>
            {canWrite && <th scope="col">Actions</th>}
          </tr>
        </thead>
        <tbody>
          {items.map((v) => {
            const id = encodeURIComponent(v.rule.id);
            const firings = v.targets.filter((t) => t.lastFiring !== null).map((t) => ({ targetId: t.targetId, ...t.lastFiring! }));
            const captures = (made.data?.items ?? []).filter((c) => c.trigger.ruleId === v.rule.id).slice(0, 5);
            return (
              <tr key={v.rule.id} data-rule={v.rule.id}>
                <td>{v.rule.id}</td>
                <td>
                  {v.rule.target !== undefined ? (
                    <a href={href('targets', v.rule.target)}>{v.rule.target}</a>
                  ) : (
                    Object.entries(v.rule.selector ?? {})
                      .map(([k, val]) => `${k}=${val}`)
                      .join(', ')
                  )}{' '}
                  <span class="muted">({v.matches} now)</span>
                </td>
                <td>
                  {condition(v.rule.when)}
                  <br />
                  <span class="muted">
                    cooldown {v.rule.cooldownSeconds} s, at most {v.rule.maxPerDay} a day
                  </span>
                </td>
                <td>{v.state}</td>
                <td>
                  <ul class="next-runs" data-testid="rule-targets">
                    {v.targets.map((t) => (
                      <li key={t.targetId} data-target-state={t.state}>
                        {t.targetId}: {t.down === null ? `${t.state} (${value(v.rule.when.metric, t.value)})` : <TargetHealth down={t.down} lastSampleAt={t.lastSampleAt} />}
                      </li>
                    ))}
                  </ul>
                  {v.targets.length === 0 && <span class="muted">no target matches</span>}
                </td>
                <td data-testid="rule-firings">
                  <ul class="next-runs">
                    {firings.map((f) => (
                      <li key={`${f.targetId}-${f.at}`}>
                        <time dateTime={f.at}>{time(f.at)}</time> {f.targetId}: {f.outcome} at {value(v.rule.when.metric, f.value)}
                        {f.captureId !== undefined && (
                          <>
                            {' '}
                            <a href={href('captures', f.captureId)}>capture</a>
                          </>
                        )}
                      </li>
                    ))}
                    {captures.map((c) => (
                      <li key={c.id}>
                        <a href={href('captures', c.id)}>{c.id}</a> <StatusBadge status={c.status} />
                      </li>
                    ))}
                  </ul>
                  {firings.length === 0 && captures.length === 0 && <span class="muted">none yet</span>}
                </td>
                <td>{v.rule.owner}</td>
                {canWrite && (
                  <RowActions what={`watch rule ${v.rule.id}`} path={`/v1/watch-rules/${id}`} active={v.state === 'active'} act={act} />
                )}
              </tr>
            );
          })}
        </tbody>
      </table>
      {list.data !== undefined && items.length === 0 && <p class="muted">No watch rules yet.</p>}
      {canWrite && <CreateRule onCreated={list.reload} />}
    </section>
  );
}
