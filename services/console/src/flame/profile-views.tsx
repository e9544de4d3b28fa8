/** The flame graphs pages show: a capture's profile, the growth between two, a target's latest (with its recent profiles). */
import { api, query, type CaptureRecord } from '../api.ts';
import { time } from '../format.ts';
import { useLoad } from '../hooks.ts';
import { href } from '../router.ts';
import { ErrorNote } from '../views/parts.tsx';
import { FlameGraph } from './flame-graph.tsx';
import type { ProfileTreeResponse } from './types.ts';

/** The flame graph of capture `id`'s profile; with `base`, the growth tree from that capture to it. */
export function ProfileFlame({ id, base }: { id: string; base?: string }) {
  const tree = useLoad(() => api<ProfileTreeResponse>('GET', `/v1/captures/${encodeURIComponent(id)}/profile${query({ format: 'tree', base })}`), [id, base]);
  if (tree.data === undefined) return tree.error === undefined ? <p aria-busy="true">Loading the profile…</p> : <ErrorNote error={tree.error} />;
  return <FlameGraph tree={tree.data.tree} />;
}

/** How many of a target's newest profiles its page lists. */
const RECENT = 5;

/** The target's newest succeeded sampling profiles, newest first (one-off, a watch rule's fallback or continuous: all are captures of kind sampling). */
async function recentProfiles(targetId: string): Promise<CaptureRecord[]> {
  const res = await api<{ items: CaptureRecord[] }>('GET', `/v1/captures${query({ target: targetId, status: 'succeeded', kind: 'sampling', limit: RECENT })}`);
  return res.items.filter((c) => c.artifact?.kind === 'sampling-profile');
}

/** Where a profile comes from: a continuous profile's read (beside a snapshot or at its interval), or a one-off's trigger. */
function origin(c: CaptureRecord): string {
  if (c.trigger.besideOf !== undefined) return 'continuous, stored beside a snapshot';
  if (c.trigger.kind === 'profile') return 'continuous';
  return `one-off (${c.trigger.kind})`;
}

/** A target's latest allocation profile as a flame graph, or how to take one; then its recent profiles, each with a link to its growth to the newest. */
export function LatestProfile({ targetId }: { targetId: string }) {
  const latest = useLoad(() => recentProfiles(targetId), [targetId]);
  if (latest.error !== undefined) return <ErrorNote error={latest.error} />;
  if (latest.data === undefined) return <p aria-busy="true">Looking for a profile…</p>;
  const c = latest.data[0];
  if (c === undefined) {
    return (
      <p class="muted" data-testid="no-profile">
        No allocation profile of {targetId} yet. Take one with <code>heapcap trigger {targetId} --sampling 30s</code> (or POST /v1/captures with{' '}
        <code>{'{"options": {"kind": "sampling"}}'}</code>); its flame graph then shows here.
      </p>
    );
  }
  return (
    <>
      <p data-testid="latest-profile">
        From <a href={href('captures', c.id)}>{c.id}</a>, taken {time(c.finishedAt ?? c.createdAt)}.
      </p>
      <ProfileFlame id={c.id} />
      {latest.data.length > 1 && (
        <>
          <h3>Recent profiles</h3>
          <ul data-testid="recent-profiles">
            {latest.data.map((p, i) => (
              <li key={p.id} data-capture={p.id}>
                <a href={href('captures', p.id)}>{time(p.finishedAt ?? p.createdAt)}</a> {origin(p)}
                {i === 0 ? (
                  ', shown above'
                ) : (
                  <>
                    {', '}
                    <a href={`${href('compare')}?base=${p.id}&head=${c.id}`} data-testid="growth-to-newest">
                      its growth to the newest
                    </a>
                  </>
                )}
              </li>
            ))}
          </ul>
        </>
      )}
    </>
  );
}
