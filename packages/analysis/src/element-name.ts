/**
 * The name of a DOM element's native node without its attribute values
 * (issue 41). Chromium names each element node with its whole opening tag,
 * values included (`<input id="in1" value="…">`, `<div id="…" class="…"
 * data-token="…" title="…">`, measured on Chromium 156, also for detached
 * elements); redaction keeps the tag and the attribute names:
 * `<input id value>`. The summary groups elements by tag (class-name.ts), so
 * its element classes are the same either way.
 */

/** An attribute: its name, then `="value"` or nothing; the value runs to the next quote. */
const ATTRIBUTE = /\s+([^\s"'>/=]+)(?:="[^"]*")?/y;
const TAG = /^(Detached )?<([^\s"'<>/=]+)/;

/**
 * `name` with the values of its attributes dropped when it is an element's
 * opening tag; any other name unchanged. What does not parse as tag and
 * attributes keeps only the tag (`<div>`): nothing after the tag is trusted.
 */
export function elementNameWithoutValues(name: string): string {
  if (!name.endsWith('>')) return name;
  const tag = TAG.exec(name);
  if (tag === null) return name;
  const head = `${tag[1] ?? ''}<${tag[2] as string}`;
  const names: string[] = [];
  const end = name.length - 1;
  ATTRIBUTE.lastIndex = tag[0].length;
  while (ATTRIBUTE.lastIndex < end) {
    const at = ATTRIBUTE.lastIndex;
    const m = ATTRIBUTE.exec(name);
    if (m === null || m.index !== at) return `${head}>`;
    names.push(m[1] as string);
  }
  if (ATTRIBUTE.lastIndex !== end) return `${head}>`;
  return names.length === 0 ? `${head}>` : `${head} ${names.join(' ')}>`;
}
