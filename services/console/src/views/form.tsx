/**
 * What the create forms (schedules, watch rules, leak hunts) share: inputs that show the
 * API's validation messages at their field, and the "one target or every
 * target with labels" choice.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api, asFailure, type ApiFailure, type FieldIssue, type Target } from '../api.ts';
import { useLoad } from '../hooks.ts';
import { ErrorNote } from './parts.tsx';

type By = 'target' | 'selector';
/** The fields every create form has. */
type Base = 'id' | 'target' | 'selector';

/** "service=checkout, env=prod" → {service: "checkout", env: "prod"}; a part without "=" is kept for the API to refuse. */
export function parseSelector(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(',').map((p) => p.trim()).filter((p) => p !== '')) {
    const eq = part.indexOf('=');
    out[eq < 0 ? part : part.slice(0, eq).trim()] = eq < 0 ? '' : part.slice(eq + 1).trim();
  }
  return out;
}

/** The messages of `failure` for `field` (its path or below it). */
export function issuesOf(failure: ApiFailure | undefined, field: string): string[] {
  return failure?.fields.filter((i) => i.path === field || i.path.startsWith(`${field}.`)).map((i) => i.message) ?? [];
}

/**
 * A create form's state: its text values, the API's failure, and submit,
 * which POSTs `body(values)` plus the id and the target or selector.
 * `input` and `targetOrLabels` render fields whose messages come from it.
 */
export function useCreateForm<F extends string>(opts: { path: string; prefix: string; initial: Record<F | Base, string>; body: (values: Record<F | Base, string>) => Record<string, unknown>; onCreated: (created: unknown) => void }) {
  const [by, setBy] = useState<By>('target');
  const [values, setValues] = useState(opts.initial);
  const [failure, setFailure] = useState<ApiFailure | undefined>();
  const [busy, setBusy] = useState(false);
  // From the latest state, not this render's: two events before the next render must both count.
  const set = (f: F | Base) => (e: Event) => {
    const value = (e.currentTarget as HTMLInputElement).value;
    setValues((v) => ({ ...v, [f]: value }));
  };
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setFailure(undefined);
    const body = opts.body(values);
    if (values.id.trim() !== '') body['id'] = values.id.trim();
    if (by === 'target') body['target'] = values.target;
    else body['selector'] = parseSelector(values.selector);
    try {
      const created = await api<unknown>('POST', opts.path, body);
      setValues((v) => ({ ...v, id: '' }));
      opts.onCreated(created);
    } catch (err) {
      setFailure(asFailure(err));
    } finally {
      setBusy(false);
    }
  };
  const input = (f: F | Base, label: string, extra: Record<string, string> = {}) => (
    <FieldInput id={`${opts.prefix}-${f.replace(/\./g, '-')}`} field={f} label={label} value={values[f]} onInput={set(f)} messages={issuesOf(failure, f)} extra={extra} />
  );
  const targetSelect = () => <TargetSelect prefix={opts.prefix} target={values.target} onTarget={set('target')} messages={issuesOf(failure, 'target')} />;
  const targetOrLabels = (legend: string) => (
    <TargetOrLabels
      legend={legend}
      prefix={opts.prefix}
      by={by}
      setBy={setBy}
      target={values.target}
      onTarget={set('target')}
      targetMessages={issuesOf(failure, 'target')}
      selectorInput={input('selector', 'Labels', { placeholder: 'service=checkout, env=prod' })}
    />
  );
  return { values, setValues, failure, busy, submit, input, targetSelect, targetOrLabels };
}

/** Pause / resume / delete buttons of a list: `act` sends the request, then reloads the list; a refusal is kept in `failure`. */
export function useActions(reload: () => void): { failure: ApiFailure | undefined; act: (path: string, method?: string) => Promise<void> } {
  const [failure, setFailure] = useState<ApiFailure | undefined>();
  const act = async (path: string, method = 'POST'): Promise<void> => {
    setFailure(undefined);
    try {
      await api(method, path);
      reload();
    } catch (err) {
      setFailure(asFailure(err));
    }
  };
  return { failure, act };
}

/** The actions cell of a schedule's or rule's row: Pause or Resume, and Delete after a confirmation. */
export function RowActions({ what, path, active, act }: { what: string; path: string; active: boolean; act: (path: string, method?: string) => Promise<void> }) {
  return (
    <td class="actions">
      <button type="button" data-action={active ? 'pause' : 'resume'} onClick={() => void act(`${path}/${active ? 'pause' : 'resume'}`)}>
        {active ? 'Pause' : 'Resume'}
      </button>{' '}
      <button type="button" data-action="delete" onClick={() => confirm(`Delete ${what}?`) && void act(path, 'DELETE')}>
        Delete
      </button>
    </td>
  );
}

/** A failure that is not a field's, and the field messages for fields the form has no input for, above the form. */
export function FormIssues({ failure, fields }: { failure: ApiFailure | undefined; fields: readonly string[] }) {
  const elsewhere: FieldIssue[] = failure?.fields.filter((i) => !fields.some((f) => i.path === f || i.path.startsWith(`${f}.`))) ?? [];
  return (
    <>
      {failure !== undefined && failure.code !== 'validation_failed' && <ErrorNote error={failure} />}
      {elsewhere.length > 0 && (
        <p class="error" role="alert">
          {elsewhere.map((i) => `${i.path}: ${i.message}`).join('; ')}
        </p>
      )}
    </>
  );
}

/** A labelled input; its field's messages below it, linked by aria-describedby. */
export function FieldInput(props: { id: string; field: string; label: string; value: string; onInput: (e: Event) => void; messages: string[]; extra?: Record<string, string> }) {
  const { id, field, label, value, onInput, messages, extra } = props;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input id={id} name={field} value={value} onInput={onInput} aria-invalid={messages.length > 0 ? 'true' : undefined} aria-describedby={messages.length > 0 ? `${id}-error` : undefined} {...extra} />
      {messages.length > 0 && (
        <span class="error" id={`${id}-error`} data-field-error={field}>
          {messages.join('; ')}
        </span>
      )}
    </div>
  );
}

/** One registered target (a select) or every target with labels (the form's own selector input). */
function TargetOrLabels(props: { legend: string; prefix: string; by: By; setBy: (by: By) => void; target: string; onTarget: (e: Event) => void; targetMessages: string[]; selectorInput: ComponentChildren }) {
  const { legend, prefix, by, setBy, target, onTarget, targetMessages, selectorInput } = props;
  return (
    <fieldset>
      <legend>{legend}</legend>
      <label>
        <input type="radio" name="by" checked={by === 'target'} onChange={() => setBy('target')} /> one target
      </label>{' '}
      <label>
        <input type="radio" name="by" checked={by === 'selector'} onChange={() => setBy('selector')} /> every target with labels
      </label>
      {by === 'target' ? (
        <TargetSelect prefix={prefix} target={target} onTarget={onTarget} messages={targetMessages} />
      ) : (
        selectorInput
      )}
    </fieldset>
  );
}

/** One registered target, chosen from a select; the API's messages for `target` below it. */
function TargetSelect({ prefix, target, onTarget, messages }: { prefix: string; target: string; onTarget: (e: Event) => void; messages: string[] }) {
  const loaded = useLoad(() => api<{ items: { target: Target }[] }>('GET', '/v1/targets'), []);
  const targets = (loaded.data?.items ?? []).map((i) => i.target);
  // A target given before the list arrived (the target page's "Hunt") is an option from the start.
  const ids = targets.some((t) => t.id === target) || target === '' ? targets.map((t) => t.id) : [target, ...targets.map((t) => t.id)];
  return (
    <div class="field">
      <label for={`${prefix}-target`}>Target</label>
      <select id={`${prefix}-target`} name="target" value={target} onChange={onTarget} aria-invalid={messages.length > 0 ? 'true' : undefined} aria-busy={loaded.loading ? 'true' : undefined}>
        <option value="">choose…</option>
        {ids.map((id) => (
          <option key={id} value={id}>
            {id}
          </option>
        ))}
      </select>
      {messages.length > 0 && (
        <span class="error" data-field-error="target">
          {messages.join('; ')}
        </span>
      )}
    </div>
  );
}
