/**
 * Inspector WebSocket URLs end in a UUID that grants full control of the
 * target to whoever can reach the port. Keep it out of messages, logs and
 * manifests (which many people read): `ws://127.0.0.1:9229/…`.
 */
export function redactInspectorUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}/…`;
  } catch {
    return 'the inspector URL';
  }
}

/**
 * A page URL as a redacted capture shows it (issue 41): scheme, host and
 * path; the query, the fragment and any userinfo dropped (`?token=…` is where
 * pages carry secrets). Not a URL: `the page URL`, since nothing of it can be
 * told apart as safe.
 */
export function redactPageUrl(url: string): string {
  if (url === '') return url;
  try {
    const u = new URL(url);
    // Opaque URLs (about:blank, data:…) have no host: only the scheme stays, a data: URL's payload is content.
    if (u.host === '' && !u.protocol.startsWith('file')) return u.href === 'about:blank' ? u.href : `${u.protocol}…`;
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return 'the page URL';
  }
}

const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi;

/**
 * `text` (an error's message or hint) with each URL that has a query, a
 * fragment or userinfo shown as {@link redactPageUrl} shows it: a redacted
 * capture's record and logs list the pages a selector saw without their
 * queries. Other URLs stay as written.
 */
export function redactUrlsInText(text: string): string {
  return text.replace(URL_IN_TEXT, (match) => {
    // Punctuation that ends a sentence or a list item (`; `) belongs to the text, not to the URL.
    const tail = /[;,.)]+$/.exec(match)?.[0] ?? '';
    const url = match.slice(0, match.length - tail.length);
    return /[?#@]/.test(url) ? `${redactPageUrl(url)}${tail}` : match;
  });
}
