/** A scheduled capture's `growth`: what grew since the target's previous finished capture (the record has it; the page hid it). */
import type { Growth } from '../api.ts';
import { bytes, signed } from '../format.ts';
import { href } from '../router.ts';

/** The suspects (one line each, with where their class was allocated when the profiles beside the captures say) and the classes that grew most, with a link to the capture they are measured from. */
export function GrowthSection({ growth }: { growth: Growth }) {
  return (
    <section data-testid="growth">
      <h2>Growth</h2>
      <p class="muted">
        {growth.since === null ? (
          'No earlier finished capture of this target to compare with.'
        ) : (
          <>
            Since capture <a href={href('captures', growth.since)}>{growth.since}</a>, the previous finished capture of this target.
          </>
        )}
      </p>
      {growth.suspects !== undefined && growth.suspects.items.length > 0 && (
        <ol class="suspects" data-testid="growth-suspects">
          {growth.suspects.items.map((s) => (
            <li key={s.rank} data-class={s.class}>
              {s.reason}
              {s.allocated !== undefined && (
                <div class="muted" data-testid="suspect-allocated">
                  {s.allocated}
                </div>
              )}
            </li>
          ))}
        </ol>
      )}
      {growth.suspects?.note !== undefined && <p class="muted">{growth.suspects.note}</p>}
      {growth.classes.length > 0 && (
        <table class="grid">
          <thead>
            <tr>
              <th scope="col">Class</th>
              <th scope="col">Δ count</th>
              <th scope="col">Δ self size</th>
              <th scope="col">Δ retained</th>
            </tr>
          </thead>
          <tbody>
            {growth.classes.map((c) => (
              <tr key={c.name}>
                <td>{c.name}</td>
                <td class="num">{signed(c.countDelta)}</td>
                <td class="num">{signed(c.selfSizeDelta, bytes)}</td>
                <td class="num">{c.retainedSizeDelta === undefined ? '–' : signed(c.retainedSizeDelta, bytes)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
