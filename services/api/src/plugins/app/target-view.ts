/**
 * What a caller sees of a registry entry. A node target's `ws` URL can carry
 * user info and ends in the inspector's session UUID, which is as good as code
 * execution on the target: only targets:admin (who can set it anyway) sees it
 * whole. Everyone else sees `ws://HOST:PORT/…`, the form the logs use.
 */
import type { RegisteredTarget } from '@heapcap/state';
import type { Principal } from '../../auth/scopes.ts';

/** `ws://HOST:PORT/…`: scheme, host and port of an inspector URL; no user info, path or query. */
export function redactWsUrl(url: string): string {
  try {
    const u = new URL(url);
    // The port is shown even when it is the scheme's default (which URL drops).
    const port = u.port !== '' ? u.port : u.protocol === 'wss:' ? '443' : '80';
    return `${u.protocol}//${u.hostname}:${port}/…`;
  } catch {
    return 'ws://…';
  }
}

/** `entry` as `principal` may see it. */
export function targetView(entry: RegisteredTarget, principal: Principal): RegisteredTarget {
  const t = entry.target;
  if (principal.scopes.has('targets:admin') || t.kind !== 'node' || t.ws === undefined) return entry;
  return { ...entry, target: { ...t, ws: redactWsUrl(t.ws) } };
}
