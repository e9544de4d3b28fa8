/** Captures: newest first, filtered by target and status, a page at a time (the API's cursor). */
import { useState } from 'preact/hooks';
import { api, query, type CaptureRecord } from '../api.ts';
import { useLoad } from '../hooks.ts';
import { CaptureTable, ErrorNote } from './parts.tsx';

const STATUSES = ['', 'queued', 'running', 'succeeded', 'failed', 'cancelled', 'expired'];
const PAGE = 20;

export function CapturesView({ params }: { params: URLSearchParams }) {
  const [target, setTarget] = useState(params.get('target') ?? '');
  const [status, setStatus] = useState(params.get('status') ?? '');
  // The cursors of the pages before this one: "Previous" pops, "Next" pushes.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const page = useLoad(
    () => api<{ items: CaptureRecord[]; nextCursor: string | null }>('GET', `/v1/captures${query({ target: target.trim(), status, limit: PAGE, cursor })}`),
    [target, status, cursor],
  );
  const filter = (set: (v: string) => void) => (v: string) => {
    set(v);
    setCursors([undefined]);
  };
  return (
    <section>
      <h1>Captures</h1>
      <div class="toolbar">
        <label>
          Target <input value={target} onChange={(e) => filter(setTarget)(e.currentTarget.value)} placeholder="any" />
        </label>
        <label>
          Status{' '}
          <select value={status} onChange={(e) => filter(setStatus)(e.currentTarget.value)}>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s === '' ? 'any' : s}
              </option>
            ))}
          </select>
        </label>
      </div>
      <ErrorNote error={page.error} />
      <CaptureTable items={page.data?.items ?? []} showTarget />
      <div class="toolbar">
        <button type="button" disabled={cursors.length < 2} onClick={() => setCursors((cs) => cs.slice(0, -1))}>
          Previous
        </button>
        <span>Page {cursors.length}</span>
        <button type="button" disabled={page.data?.nextCursor == null} onClick={() => setCursors((cs) => [...cs, page.data?.nextCursor ?? undefined])}>
          Next
        </button>
      </div>
    </section>
  );
}
