/** The flame graphs pages show: a capture's profile, the growth between two, a target's latest. */
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

/** The target's newest succeeded sampling profile (one-off, a watch rule's fallback or continuous: all are captures of kind sampling), or null. */
async function latestProfile(targetId: string): Promise<CaptureRecord | null> {
  const res = await api<{ items: CaptureRecord[] }>('GET', `/v1/captures${query({ target: targetId, status: 'succeeded', kind: 'sampling', limit: 1 })}`);
  return res.items.find((c) => c.artifact?.kind === 'sampling-profile') ?? null;
}

/** A target's latest allocation profile as a flame graph, or how to take one. */
export function LatestProfile({ targetId }: { targetId: string }) {
  const latest = useLoad(() => latestProfile(targetId), [targetId]);
  if (latest.error !== undefined) return <ErrorNote error={latest.error} />;
  if (latest.data === undefined) return <p aria-busy="true">Looking for a profile…</p>;
  const c = latest.data;
  if (c === null) {
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
    </>
  );
}
