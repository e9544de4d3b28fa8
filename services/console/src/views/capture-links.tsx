/**
 * What ties a capture to others and to its own past, on its page: the
 * allocation profile stored beside a snapshot and the snapshot a profile was
 * stored beside (continuous profiles, docs/watch.md), where a continuous
 * profile was read from and the time no sampler ran before it, and a retried
 * capture's failed attempts (docs/api.md, `failedAttempts`); and, on the
 * compare page of two snapshots, the way to the growth flame graph of the
 * profiles stored beside them.
 */
import { api, type CaptureRecord, type FailedAttempt } from '../api.ts';
import { bytes, time } from '../format.ts';
import { useLoad } from '../hooks.ts';
import { href } from '../router.ts';
import { ErrorNote } from './parts.tsx';

/** Facts-list rows (inside `<dl class="facts">`): the profile beside a snapshot, or a profile's snapshot and sampler. */
export function ProfileFacts({ capture }: { capture: CaptureRecord }) {
  const { trigger } = capture;
  const gap = trigger.profile?.gap;
  return (
    <>
      {capture.profileCaptureId !== undefined && (
        <>
          <dt>Allocation profile</dt>
          <dd>
            <a href={href('captures', capture.profileCaptureId)} data-testid="profile-beside">
              {capture.profileCaptureId}
            </a>{' '}
            (stored beside this snapshot)
          </dd>
        </>
      )}
      {trigger.besideOf !== undefined && (
        <>
          <dt>Snapshot</dt>
          <dd>
            stored beside{' '}
            <a href={href('captures', trigger.besideOf)} data-testid="beside-of">
              {trigger.besideOf}
            </a>
          </dd>
        </>
      )}
      {trigger.profile !== undefined && (
        <>
          <dt>Read from</dt>
          <dd data-testid="profile-sampler">
            the held sampler (continuous profile), running since {time(trigger.profile.since)}, one sample per {bytes(trigger.profile.samplingIntervalBytes)}
          </dd>
        </>
      )}
      {gap !== undefined && (
        <>
          <dt>Gap</dt>
          <dd data-testid="profile-gap">
            no sampler ran from {time(gap.from)} to {time(gap.to)}: {gap.reason}
          </dd>
        </>
      )}
    </>
  );
}

/** A retried capture's failed attempts, oldest first: number, phase, error, and when the retry was due. */
export function FailedAttempts({ attempts }: { attempts: FailedAttempt[] }) {
  return (
    <>
      <h2>Failed attempts</h2>
      <ol data-testid="failed-attempts">
        {attempts.map((a) => (
          <li key={a.attempt} data-attempt={a.attempt}>
            <strong>
              Attempt {a.attempt} of {a.of}
            </strong>{' '}
            failed {a.phase !== undefined && `in phase ${a.phase} `}at {time(a.failedAt)}: <code>{a.code}</code> {a.message}{' '}
            <div class="muted">{a.nextAttemptAt === null ? 'No retry followed.' : `Retry due at ${time(a.nextAttemptAt)}.`}</div>
          </li>
        ))}
      </ol>
    </>
  );
}

/** Two snapshots with profiles beside them: a link to the compare page of those two profiles (its growth flame graph). */
export function BesideProfilesLink({ base, head }: { base: string; head: string }) {
  const records = useLoad(async () => Promise.all([base, head].map(async (id) => (await api<{ capture: CaptureRecord }>('GET', `/v1/captures/${encodeURIComponent(id)}`)).capture)), [base, head]);
  if (records.error !== undefined) return <ErrorNote error={records.error} />;
  const [b, h] = (records.data ?? []).map((r) => r.profileCaptureId);
  if (b === undefined || h === undefined) return null;
  return (
    <p>
      From the allocation profiles stored beside the two snapshots:{' '}
      <a href={`${href('compare')}?base=${b}&head=${h}`} data-testid="beside-growth-flame">
        their growth flame graph
      </a>
      .
    </p>
  );
}
