/**
 * Console deep links: the one place that builds the URL of a console page a
 * person is sent to (Slack messages, the CLI's `open:` lines, the docs'
 * alert and dashboard links). The console routes on the hash
 * (`/ui/#/captures/ID`, services/console/src/router.ts), so these links need
 * no server-side rewrite and survive a sign-in.
 */

/** Where the console is served, under the public URL. */
export const CONSOLE_PATH = '/ui/';

/** A console route under `publicUrl` (no trailing slash): consoleUrl(u, ['captures', id]) → `u/ui/#/captures/ID`. */
export function consoleUrl(publicUrl: string, parts: readonly string[], query?: Readonly<Record<string, string>>): string {
  const q = query === undefined ? '' : `?${new URLSearchParams(query).toString()}`;
  return `${publicUrl.replace(/\/+$/, '')}${CONSOLE_PATH}#/${parts.map(encodeURIComponent).join('/')}${q}`;
}

/** The console pages heapcap links to, each under `publicUrl`. */
export const consoleLinks = {
  /** A capture's page: waterfall, sizes, top classes, download. */
  capture: (publicUrl: string, captureId: string): string => consoleUrl(publicUrl, ['captures', captureId]),
  /** The compare (diff) of two captures of one target: suspects first. */
  compare: (publicUrl: string, baseId: string, headId: string): string => consoleUrl(publicUrl, ['compare'], { base: baseId, head: headId }),
  /** A leak hunt's report: suspect #1 first. */
  hunt: (publicUrl: string, huntId: string): string => consoleUrl(publicUrl, ['hunts', huntId]),
  /** A target's page: its memory curve with its captures on the time axis. */
  target: (publicUrl: string, targetId: string): string => consoleUrl(publicUrl, ['targets', targetId]),
  /** The captures list, filtered (`{ status: 'failed' }`, `{ target }`). */
  captures: (publicUrl: string, filter?: Readonly<{ target?: string; status?: string }>): string => consoleUrl(publicUrl, ['captures'], filter === undefined ? undefined : Object.fromEntries(Object.entries(filter).filter((e): e is [string, string] => e[1] !== undefined))),
  /** The watch rules and their last firings. */
  watchRules: (publicUrl: string): string => consoleUrl(publicUrl, ['watch-rules']),
} as const;
