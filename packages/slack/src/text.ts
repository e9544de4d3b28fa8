/**
 * Text in and out of Slack. Incoming command text has Slack's escapes
 * (`&amp; &lt; &gt;`) and markup (`<@U123|name>`, `<#C123|chan>`,
 * `<https://…|label>`, `<!here>`); heapcap stores what the user meant and
 * escapes it again on the way out, so a reason can never mention `@channel`
 * or break a message. Truncation never splits an emoji or a combined character.
 */

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** Escape for mrkdwn and plain_text: only `&`, `<` and `>` are special. */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Replace Slack's markup in user text with what it shows, then undo its escapes. */
export function decodeSlackText(text: string): string {
  const plain = text.replace(/<([^<>]*)>/g, (_all, inner: string) => {
    const [ref = '', label] = inner.split('|', 2);
    if (ref.startsWith('@')) return `@${label ?? ref.slice(1)}`;
    if (ref.startsWith('#')) return `#${label ?? ref.slice(1)}`;
    if (ref.startsWith('!subteam^')) return `@${label ?? ref.slice('!subteam^'.length)}`;
    if (ref.startsWith('!')) return `@${label ?? ref.slice(1).split('^')[0]}`;
    return label === undefined || label === ref ? ref : `${label} (${ref})`;
  });
  return plain.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

/** Number of user-perceived characters. */
export function graphemeLength(text: string): number {
  let n = 0;
  for (const _ of segmenter.segment(text)) n++;
  return n;
}

/**
 * At most `maxUnits` UTF-16 code units (how Slack and zod count), cut at a
 * grapheme boundary, with `ellipsis` appended when cut.
 */
export function fit(text: string, maxUnits: number, ellipsis = '…'): string {
  if (text.length <= maxUnits) return text;
  const budget = Math.max(0, maxUnits - ellipsis.length);
  let out = '';
  for (const { segment } of segmenter.segment(text)) {
    if (out.length + segment.length > budget) break;
    out += segment;
  }
  return out + ellipsis;
}

/** Collapse runs of whitespace (including newlines and non-breaking spaces) into one space and trim. */
export function squash(text: string): string {
  return text.replace(/[\s\u00a0\u2000-\u200b\u3000]+/g, ' ').trim();
}

/** A URL as a mrkdwn link target: `&` escaped like any other text, and the characters that end a link encoded. */
export function linkTarget(url: string): string {
  return url.replace(/&/g, '&amp;').replace(/</g, '%3C').replace(/>/g, '%3E').replace(/\|/g, '%7C');
}
