/** Suspects as a ranked list, and a retainer path: what a diff (compare) and a leak hunt's report both show. */
import type { PathStep, SmallChanges, Suspect } from '../api.ts';
import { bytes, signed } from '../format.ts';

function holderText(h: NonNullable<Suspect['holder']>): string {
  const edge = h.edge === null ? '' : ` .${h.edge}`;
  const via = h.via === null ? '' : ` via ${h.via}`;
  return `${h.class}${edge}${via}`;
}

/** A retainer path, root first: `Window → Map.sessions → SessionRecord`. */
export function RetainerPath({ path }: { path: PathStep[] }) {
  return (
    <div class="path">
      {path.map((p, i) => (
        <span key={i}>
          {i > 0 && ' → '}
          {p.class}
          {p.edge !== '' && <code>.{p.edge}</code>}
        </span>
      ))}
    </div>
  );
}

/**
 * The ranked suspects (data-rank, data-class on each item). `reasons`: the
 * engine's sentence under each; summary-only reasons repeat the numbers and
 * say "holder unknown", which a note above the list says once instead.
 */
export function SuspectList({ suspects, reasons, small }: { suspects: Suspect[]; reasons: boolean; small?: SmallChanges | undefined }) {
  return (
    <>
      <ol class="suspects" data-testid="suspects">
        {suspects.map((s) => (
          <li key={s.rank} data-rank={s.rank} data-class={s.class}>
            <strong>
              <code>{s.class}</code>
            </strong>{' '}
            <span class="muted">({s.kind})</span>
            {s.holder !== null && (
              <>
                {' '}
                held by <code>{holderText(s.holder)}</code>
              </>
            )}
            : {signed(s.countDelta)} objects, {signed(s.selfSizeDelta, bytes)} self
            {s.retainedSizeDelta !== undefined && `, ${signed(s.retainedSizeDelta, bytes)} retained`}
            {reasons && <div>{s.reason}</div>}
            {s.parts !== undefined && s.parts.length > 1 && (
              // Divs, not a nested list: the ranked items stay the list's only <li>s.
              <div class="parts" data-testid="suspect-parts">
                {s.parts.map((p, i) => (
                  <div key={i} data-role={p.role} data-part-class={p.class}>
                    {p.role}: {p.countDelta > 0 && `${signed(p.countDelta)} `}
                    <code>{p.class}</code> {signed(p.retainedSizeDelta, bytes)}
                  </div>
                ))}
              </div>
            )}
            {s.allocated !== undefined && (
              <div class="muted" data-testid="suspect-allocated">
                {s.allocated}
              </div>
            )}
            {s.path !== null && s.path.length > 0 && s.shortPath === undefined && <RetainerPath path={s.path} />}
            {/* The application's own names; V8's whole path one click away. */}
            {s.path !== null && s.path.length > 0 && s.shortPath !== undefined && (
              <details class="path" data-testid="suspect-path">
                <summary>{s.shortPath}</summary>
                <RetainerPath path={s.path} />
              </details>
            )}
          </li>
        ))}
      </ol>
      {suspects.length === 0 && (
        <p class="muted" data-testid="nothing-grew">
          Nothing grew beyond noise.
        </p>
      )}
      {small !== undefined && small.count > 0 && (
        <p class="muted" data-testid="small-changes">
          and {small.count.toLocaleString('en')} small change{small.count === 1 ? '' : 's'} ({bytes(small.bytes)} in all)
        </p>
      )}
    </>
  );
}
