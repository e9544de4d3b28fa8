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
