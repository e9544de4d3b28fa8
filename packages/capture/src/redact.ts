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
