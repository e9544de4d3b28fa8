/**
 * Hash routes (`#/targets/checkout-api`): the API serves one index.html at
 * /ui/, so a reload or a pasted link never needs a server-side rewrite.
 */
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  /** Path segments after `#/`: ['targets', 'checkout-api']. */
  parts: string[];
  params: URLSearchParams;
}

function parse(hash: string): Route {
  const raw = hash.replace(/^#\/?/, '');
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  return { parts: path.split('/').filter((s) => s !== '').map(decodeURIComponent), params: new URLSearchParams(q < 0 ? '' : raw.slice(q + 1)) };
}

/** The current route; re-renders on every hash change. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parse(location.hash));
  useEffect(() => {
    const on = (): void => setRoute(parse(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

/** A link target for a route: href('captures', id) → "#/captures/ID". */
export function href(...parts: string[]): string {
  return `#/${parts.map(encodeURIComponent).join('/')}`;
}

/** Go to a route (pushes history, like a click on a link). */
export function go(to: string): void {
  location.hash = to.replace(/^#/, '');
}
