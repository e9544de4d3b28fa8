/** Small pieces every view uses. */
import type { ApiFailure, CaptureRecord, CaptureStatus } from '../api.ts';
import { bytes, time } from '../format.ts';
import { href } from '../router.ts';

/** An API failure as the user sees it: the stable code and the API's message. */
export function ErrorNote({ error }: { error: ApiFailure | undefined }) {
  if (error === undefined) return null;
  return (
    <p class="error" role="alert">
      <code>{error.code}</code> {error.message}
    </p>
  );
}

/** A failed capture's or hunt's error in its facts list: the stable code, the message and the hint. */
export function ErrorFact({ error }: { error: { code: string; message: string; hint?: string | undefined } }) {
  return (
    <>
      <dt>Error</dt>
      <dd class="error">
        <code>{error.code}</code> {error.message}
        {error.hint !== undefined && <div class="muted">{error.hint}</div>}
      </dd>
    </>
  );
}

export function StatusBadge({ status }: { status: CaptureStatus }) {
  return <span class={`status status-${status}`} data-status={status}>{status}</span>;
}

/** Captures as a table (the captures list, a target's page): id, status, trigger, size, time. */
export function CaptureTable({ items, showTarget }: { items: CaptureRecord[]; showTarget: boolean }) {
  return (
    <table class="grid" data-testid="captures">
      <thead>
        <tr>
          <th scope="col">Capture</th>
          {showTarget && <th scope="col">Target</th>}
          <th scope="col">Status</th>
          <th scope="col">Trigger</th>
          <th scope="col">Size (stored)</th>
          <th scope="col">Created</th>
        </tr>
      </thead>
      <tbody>
        {items.map((c) => (
          <tr key={c.id} data-capture={c.id}>
            <td>
              <a href={href('captures', c.id)}>{c.id}</a>
            </td>
            {showTarget && (
              <td>
                <a href={href('targets', c.targetId)}>{c.targetId}</a>
              </td>
            )}
            <td>
              <StatusBadge status={c.status} />
              {c.pinned !== null && (
                <span class="label" data-testid="pinned" title={`pinned by ${c.pinned.by}${c.pinned.reason === undefined ? '' : `: ${c.pinned.reason}`}`}>
                  pinned
                </span>
              )}
              {c.error !== null && (
                <div class="error" data-testid="row-error">
                  {c.error.code}: {c.error.message}
                </div>
              )}
            </td>
            <td>
              {c.trigger.kind} by {c.trigger.who}
            </td>
            <td class="num">{bytes(c.artifact?.bytesStored)}</td>
            <td>{time(c.createdAt)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
