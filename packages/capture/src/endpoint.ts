/**
 * Endpoint resolution: turn a target description into an inspector WebSocket URL.
 *
 * - node:      `host:port` (discovered through GET /json/list) or a `ws://` URL
 * - node-pid:  a local process opened with SIGUSR1, then reached on its inspector port
 * - chromium:  a browser's remote debugging `host:port` plus a selector
 */
import { readFile, readlink } from 'node:fs/promises';
import { lookup } from 'node:dns/promises';
import { get as httpGet } from 'node:http';
import { isIP } from 'node:net';
import { basename } from 'node:path';
import { CaptureError } from './errors.ts';
import { sleep, throwIfAborted } from './deadline.ts';
import { redactInspectorUrl } from './redact.ts';
import { closeOpenedInspector, portListening, type OpenedInspector } from './inspector-close.ts';
import { listeningPorts, type ListeningPort } from './listening-ports.ts';

/** Which page or worker of a browser to capture. */
export interface ChromiumSelector {
  /** Regular expression matched against the target's URL. */
  urlPattern?: string;
  /** Regular expression matched against the target's title. */
  titlePattern?: string;
  /** Target type; default `page` (headless Chromium also lists `browser_ui` targets). */
  type?: 'page' | 'worker' | 'service_worker' | 'shared_worker';
  /**
   * When several targets match: `only` (default) refuses with `target_ambiguous`;
   * `first` takes the first one the browser lists (its /json/list order).
   */
  pick?: 'only' | 'first';
}

/** Where a target is and how to reach it. */
export type EndpointSpec =
  | { kind: 'node'; inspect: string }
  | { kind: 'node'; ws: string }
  | { kind: 'node-pid'; pid: number; host?: string; port?: number }
  | { kind: 'chromium'; browser: string; select?: ChromiumSelector };

/** A resolved endpoint: the WebSocket to open and what we learnt on the way. */
export interface ResolvedEndpoint {
  product: 'node' | 'chromium';
  wsUrl: string;
  /** Human-readable, e.g. `node 127.0.0.1:9229` or `chromium 127.0.0.1:9222 page "Shop"`. */
  description: string;
  /** For node-pid: the pid the inspector must belong to. */
  expectPid?: number;
  /** For node-pid: set when the inspector was not listening before our SIGUSR1 (then we close it afterwards). */
  openedInspector?: OpenedInspector;
  /** Chromium: browser product string and V8 version from /json/version. */
  browser?: { product: string; v8Version: string | undefined };
  /** Chromium: the selected target, how many matched and how it was picked. */
  selected?: { id: string; type: string; title: string; url: string; matches: number; pick: 'only' | 'first' };
}

/** An entry of GET /json/list. */
interface InspectorTarget {
  id?: string;
  type?: string;
  title?: string;
  url?: string;
  description?: string;
  webSocketDebuggerUrl?: string;
}

export interface ResolveOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** How long to wait for a SIGUSR1-opened inspector to listen. */
  pidInspectorWaitMs?: number;
}

/** Resolve an endpoint spec to a WebSocket URL. */
export async function resolveEndpoint(spec: EndpointSpec, options: ResolveOptions): Promise<ResolvedEndpoint> {
  switch (spec.kind) {
    case 'node':
      if ('ws' in spec) return { product: 'node', wsUrl: checkWsUrl(spec.ws), description: `node ${redactInspectorUrl(spec.ws)}` };
      return resolveNodeHostPort(spec.inspect, options);
    case 'node-pid':
      return resolveNodePid(spec, options);
    case 'chromium':
      return resolveChromium(spec.browser, spec.select ?? {}, options);
  }
}

function checkWsUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CaptureError('invalid_input', `"${url}" is not a URL`, { hint: 'pass the full ws://host:port/UUID URL the target printed' });
  }
  if (parsed.protocol !== 'ws:' && parsed.protocol !== 'wss:') {
    throw new CaptureError('invalid_input', `"${redactInspectorUrl(url)}" is not a ws:// URL`, { hint: 'use --node HOST:PORT for an inspector port' });
  }
  return url;
}

/** Split and check `host:port`. */
export function parseHostPort(value: string, what = 'inspector address'): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:\s/]+):(\d{1,5})$/.exec(value.trim());
  const port = m === null ? NaN : Number(m[2]);
  if (m === null || m[1] === undefined || !(port > 0 && port < 65536)) {
    throw new CaptureError('invalid_input', `"${value}" is not a valid ${what}`, { hint: 'expected HOST:PORT, for example 127.0.0.1:9229' });
  }
  return { host: m[1], port };
}

/**
 * The listed `webSocketDebuggerUrl` with its host and port replaced by the
 * registered ones (the host as asked: its address, see addressOf): only the path (the target's id) is taken from the
 * inspector's answer. Whoever answers /json/list (a compromised target, a
 * process that took the port) could otherwise send the worker to any
 * host:port, e.g. another target's inspector or an internal service.
 */
function pinWsUrl(listed: string, host: string, port: number): string {
  let u: URL;
  try {
    u = new URL(listed);
  } catch {
    throw new CaptureError('target_not_found', `the inspector at ${host}:${port} listed a webSocketDebuggerUrl that is not a URL`, { hint: 'is this a V8 inspector?' });
  }
  if (u.protocol !== 'ws:' && u.protocol !== 'wss:') {
    throw new CaptureError('target_not_found', `the inspector at ${host}:${port} listed a ${u.protocol} URL, not ws://`, { hint: 'is this a V8 inspector?' });
  }
  return `${u.protocol}//${host}:${port}${u.pathname}${u.search}`;
}

async function resolveNodeHostPort(hostPort: string, options: ResolveOptions): Promise<ResolvedEndpoint> {
  const { host, port } = parseHostPort(hostPort);
  const targets = await listTargets(host, port, options);
  const node = targets.find((t) => typeof t.webSocketDebuggerUrl === 'string');
  if (node?.webSocketDebuggerUrl === undefined) {
    throw new CaptureError('target_not_found', `the inspector at ${host}:${port} lists no debuggable target`, {
      hint: 'another debugger may be attached (Node allows one session per target in some versions); detach it and retry',
    });
  }
  return { product: 'node', wsUrl: pinWsUrl(node.webSocketDebuggerUrl, await addressOf(host), port), description: `node ${host}:${port}` };
}

async function resolveNodePid(spec: { pid: number; host?: string; port?: number }, options: ResolveOptions): Promise<ResolvedEndpoint> {
  const { pid } = spec;
  const host = spec.host ?? '127.0.0.1';
  const port = spec.port ?? 9229;
  if (!Number.isInteger(pid) || pid <= 0) {
    throw new CaptureError('invalid_input', `"${pid}" is not a process id`, { hint: 'pass the numeric pid of a Node.js process on this host' });
  }
  signalProcess(pid, 0); // existence and permission, before anything else
  await assertNodeProcess(pid);
  // Only an inspector that was closed before we came is closed again afterwards.
  const opened = (await portListening(host, port, Math.min(options.timeoutMs, 1_000))) ? undefined : { host, port, pid };
  // What the process listened on before the signal: a port that appears after it is the inspector it opened.
  const elsewhere = opened === undefined ? undefined : await inspectorElsewhereWatch(pid, port, options);
  // SIGUSR1 makes Node.js start its inspector on 127.0.0.1:9229 (or its --inspect-port).
  signalProcess(pid, 'SIGUSR1');
  try {
    return await awaitPidInspector(pid, host, port, opened, elsewhere, options);
  } catch (err) {
    // Cancelled or failed after the SIGUSR1: close what it opened, if it is there yet.
    if (opened === undefined) throw err;
    await closeAfterFailure(opened);
    const other = await elsewhere?.find(true);
    if (other === undefined) throw err;
    const said = await closeElsewhere(pid, port, other, err);
    // A cancel stays a cancel (the inspector is closed all the same).
    throw err instanceof CaptureError && err.code === 'target_unreachable' ? said : err;
  }
}

/** Where the process's inspector opened when it is not on the asked port. */
interface ElsewhereWatch {
  /** A port the process listens on now and did not before the SIGUSR1 (`atEnd`: also the default 9229 when /proc cannot tell). */
  find(atEnd: boolean): Promise<ListeningPort | undefined>;
}

/**
 * The asked port may be wrong (`--port`): SIGUSR1 opens the inspector where
 * the target says (9229, or its --inspect-port), and heapcap must not leave it
 * open there. Reads the process's listening sockets before the signal; without
 * /proc, falls back to 9229 if nothing listened there before.
 */
async function inspectorElsewhereWatch(pid: number, port: number, options: ResolveOptions): Promise<ElsewhereWatch> {
  const before = await listeningPorts(pid);
  if (before !== undefined) {
    const known = new Set(before.map((p) => p.port));
    return {
      find: async () => {
        // The app may open ports of its own meanwhile: only an inspector's /json/list counts.
        for (const p of (await listeningPorts(pid)) ?? []) {
          if (p.port !== port && !known.has(p.port) && (await isInspector(p))) return p;
        }
        return undefined;
      },
    };
  }
  const fallback = port !== 9229 && !(await portListening('127.0.0.1', 9229, Math.min(options.timeoutMs, 1_000)));
  return {
    find: async (atEnd) => (atEnd && fallback && (await portListening('127.0.0.1', 9229, 1_000)) ? { host: '127.0.0.1', port: 9229 } : undefined),
  };
}

async function isInspector(at: ListeningPort): Promise<boolean> {
  try {
    await listTargets(at.host, at.port, { timeoutMs: 1_000 });
    return true;
  } catch {
    return false;
  }
}

/** The inspector opened on another port than the asked one: close it there, and say what happened and what to pass next time. */
async function closeElsewhere(pid: number, asked: number, other: ListeningPort, cause: unknown): Promise<CaptureError> {
  const address = `${other.host}:${other.port}`;
  let closed = false;
  let why = '';
  try {
    const { wsUrl } = await resolveNodeHostPort(address, { timeoutMs: 1_000 });
    const release = await closeOpenedInspector({ host: other.host, port: other.port, pid }, { wsUrl });
    closed = release.closed;
    why = release.note === undefined ? '' : ` (${release.note})`;
  } catch (err) {
    why = ` (${(err as Error).message})`;
  }
  const said = `process ${pid} got SIGUSR1 and opened its inspector on ${address}, not on port ${asked}`;
  if (closed) {
    return new CaptureError('target_unreachable', `${said}; heapcap closed it again`, {
      hint: `pass --port ${other.port} (the port the target's --inspect-port says)`,
      details: { pid, askedPort: asked, inspector: address, inspectorLeftOpen: false },
      cause,
    });
  }
  return new CaptureError('target_unreachable', `${said}; heapcap could not close it, so the inspector was left open on ${address}${why}`, {
    hint: `close it from a debugger attached to it (node inspect ${address}, then exec process._debugEnd()) or restart the target; next time pass --port ${other.port}`,
    details: { pid, askedPort: asked, inspector: address, inspectorLeftOpen: true },
    cause,
  });
}

/** Polls host:port until the inspector SIGUSR1 opened answers (or it is seen opening on another port). */
async function awaitPidInspector(pid: number, host: string, port: number, opened: OpenedInspector | undefined, elsewhere: ElsewhereWatch | undefined, options: ResolveOptions): Promise<ResolvedEndpoint> {
  const deadline = Date.now() + (options.pidInspectorWaitMs ?? 10_000);
  for (;;) {
    throwIfAborted(options.signal);
    try {
      const resolved = await resolveNodeHostPort(`${host}:${port}`, { ...options, timeoutMs: Math.min(options.timeoutMs, 2_000) });
      return { ...resolved, description: `node pid ${pid} (${host}:${port})`, expectPid: pid, openedInspector: opened };
    } catch (err) {
      const unreachable = err instanceof CaptureError && err.code === 'target_unreachable';
      // Nothing on the asked port, and the process listens on a new one: that is where the inspector went.
      if (!unreachable || Date.now() > deadline || (await elsewhere?.find(false)) !== undefined) {
        if (unreachable) {
          throw new CaptureError('target_unreachable', `process ${pid} got SIGUSR1 but no inspector answered on ${host}:${port}`, {
            hint: 'the process may use another inspector port (--inspect-port); pass it with --port, or it may have SIGUSR1 handled by the app',
            cause: err,
          });
        }
        throw err;
      }
    }
    await sleep(100, options.signal);
  }
}

/** Best effort, without the (possibly aborted) caller's signal: find the inspector and close it. */
async function closeAfterFailure(opened: OpenedInspector): Promise<void> {
  try {
    const { wsUrl } = await resolveNodeHostPort(`${opened.host}:${opened.port}`, { timeoutMs: 1_000 });
    await closeOpenedInspector(opened, { wsUrl });
  } catch {
    // Not listening (yet): nothing to close.
  }
}

function signalProcess(pid: number, signal: NodeJS.Signals | 0): void {
  try {
    process.kill(pid, signal);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ESRCH') {
      throw new CaptureError('target_not_found', `no process with pid ${pid}`, { hint: 'check the pid (it may have restarted); pids are those of the host the worker runs on' });
    }
    if (code === 'EPERM') {
      throw new CaptureError('permission_denied', `not allowed to signal process ${pid}`, {
        hint: 'run heapcap as the same user as the target (or root), or start the target with --inspect',
      });
    }
    throw new CaptureError('internal', `signalling ${pid} failed: ${String(err)}`, { cause: err });
  }
}

/** SIGUSR1 terminates processes that do not handle it: only send it to Node.js. */
async function assertNodeProcess(pid: number): Promise<void> {
  let name: string | undefined;
  try {
    name = basename(await readlink(`/proc/${pid}/exe`));
  } catch {
    // /proc/PID/exe is unreadable for other users' processes; cmdline is not.
  }
  if (name === undefined || !/node/i.test(name)) {
    try {
      const argv0 = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0')[0] ?? '';
      name = basename(argv0);
    } catch {
      return; // no /proc (not Linux): trust the caller
    }
  }
  if (!/node/i.test(name)) {
    throw new CaptureError('target_not_found', `process ${pid} is "${name}", not Node.js; SIGUSR1 would terminate it`, {
      hint: 'check the pid; only Node.js processes can be opened with SIGUSR1',
    });
  }
  await assertCatchesSigusr1(pid, name);
}

/** SIGUSR1 is signal 10 on Linux: bit 9 of the SigCgt mask (signal n is bit n - 1). */
const SIGUSR1_BIT = 9n;

/**
 * The name says little (measured: a copy of `sleep` named `node` passed the
 * name check and died of the SIGUSR1). What decides is whether the process
 * has a SIGUSR1 handler, which Node.js installs at start-up to open its
 * inspector: the `SigCgt` mask of /proc/PID/status (readable for any user's
 * process). Without /proc (not Linux) the caller is trusted.
 */
async function assertCatchesSigusr1(pid: number, name: string): Promise<void> {
  let status: string;
  try {
    status = await readFile(`/proc/${pid}/status`, 'utf8');
  } catch {
    return;
  }
  const hex = /^SigCgt:\s*([0-9a-f]+)$/im.exec(status)?.[1];
  if (hex === undefined) return;
  if (((BigInt(`0x${hex}`) >> SIGUSR1_BIT) & 1n) === 1n) return;
  throw new CaptureError('target_not_node', `process ${pid} ("${name}") does not catch SIGUSR1 (SigCgt ${hex} in /proc/${pid}/status), so it is not a Node.js process that SIGUSR1 would open; the signal would kill it. Nothing was sent`, {
    hint: 'check the pid; a Node.js process catches SIGUSR1 once it has started (node --disable-sigusr1 turns that off: start it with --inspect instead)',
    details: { pid, sigCgt: hex },
  });
}

async function resolveChromium(browser: string, select: ChromiumSelector, options: ResolveOptions): Promise<ResolvedEndpoint> {
  const { host, port } = parseHostPort(browser, 'browser debugging address');
  const version = await getJson<Record<string, string>>(host, port, '/json/version', options);
  const targets = await listTargets(host, port, options);
  const type = select.type ?? 'page';
  const urlRe = compilePattern(select.urlPattern, '--url-pattern');
  const titleRe = compilePattern(select.titlePattern, '--title-pattern');
  const matches = targets.filter(
    (t) =>
      t.type === type &&
      typeof t.webSocketDebuggerUrl === 'string' &&
      (urlRe === undefined || urlRe.test(t.url ?? '')) &&
      (titleRe === undefined || titleRe.test(t.title ?? '')),
  );
  const pick = select.pick ?? 'only';
  if (matches.length > 1 && pick !== 'first') throw ambiguous(matches, type, `${host}:${port}`, select);
  const chosen = matches[0];
  if (chosen?.webSocketDebuggerUrl === undefined) {
    const seen = targets
      .slice(0, 10)
      .map((t) => `${t.type ?? '?'} "${t.title ?? ''}" ${t.url ?? ''}`)
      .join('; ');
    throw new CaptureError('target_not_found', `no ${type} target of the browser at ${host}:${port} matches ${describeSelector(select)}`, {
      hint: `targets seen: ${seen === '' ? 'none' : seen}`,
      details: { type, urlPattern: select.urlPattern, titlePattern: select.titlePattern, seen: targets.length },
    });
  }
  return {
    product: 'chromium',
    wsUrl: pinWsUrl(chosen.webSocketDebuggerUrl, await addressOf(host), port),
    description: `chromium ${host}:${port} ${type} "${chosen.title ?? ''}"`,
    browser: { product: version['Browser'] ?? 'unknown', v8Version: version['V8-Version'] },
    selected: { id: chosen.id ?? '', type, title: chosen.title ?? '', url: chosen.url ?? '', matches: matches.length, pick },
  };
}

/** Several targets match and the caller did not ask for the first: say which, and how to choose. */
function ambiguous(matches: InspectorTarget[], type: string, browser: string, select: ChromiumSelector): CaptureError {
  const shown = 10;
  const listed = matches
    .slice(0, shown)
    .map((t) => `"${t.title ?? ''}" ${t.url ?? ''}`)
    .join('; ');
  const more = matches.length > shown ? `; and ${matches.length - shown} more` : '';
  return new CaptureError('target_ambiguous', `${matches.length} ${type} targets of the browser at ${browser} match ${describeSelector(select)}: ${listed}${more}`, {
    hint:
      'narrow the selector until one target matches (an anchored URL pattern such as ^https://shop\\.example/cart$, or a title pattern), ' +
      'or take the first one the browser lists with --pick first (select.pick: "first" in the targets file)',
    details: { type, urlPattern: select.urlPattern, titlePattern: select.titlePattern, matches: matches.length },
  });
}

function compilePattern(pattern: string | undefined, flag: string): RegExp | undefined {
  if (pattern === undefined) return undefined;
  try {
    return new RegExp(pattern);
  } catch (err) {
    throw new CaptureError('invalid_input', `${flag} "${pattern}" is not a valid regular expression: ${(err as Error).message}`, {
      hint: 'escape special characters, e.g. shop\\.example',
    });
  }
}

function describeSelector(s: ChromiumSelector): string {
  const parts = [s.urlPattern === undefined ? '' : `url /${s.urlPattern}/`, s.titlePattern === undefined ? '' : `title /${s.titlePattern}/`].filter(Boolean);
  return parts.length === 0 ? 'any' : parts.join(' and ');
}

async function listTargets(host: string, port: number, options: ResolveOptions): Promise<InspectorTarget[]> {
  const list = await getJson<unknown>(host, port, '/json/list', options);
  if (!Array.isArray(list)) {
    throw new CaptureError('target_not_found', `${host}:${port} answered /json/list with something that is not a target list`, {
      hint: 'this port is not a V8 inspector or browser debugging port; check the address',
    });
  }
  return list as InspectorTarget[];
}

/** Errors that mean nothing is listening or the host cannot be reached. */
// ECONNRESET: something accepted and dropped the connection at once (a dying process, a proxy with no backend).
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EADDRNOTAVAIL']);

/**
 * Node's inspector answers 400 to a Host header that is neither an IP address
 * nor `localhost` (DNS-rebinding protection), so names are resolved here and
 * the inspector is asked by address.
 */
async function addressOf(host: string): Promise<string> {
  const bare = host.replace(/^\[|\]$/g, '');
  if (isIP(bare) !== 0 || bare === 'localhost') return host;
  try {
    const { address, family } = await lookup(bare);
    return family === 6 ? `[${address}]` : address;
  } catch (err) {
    throw new CaptureError('target_unreachable', `cannot resolve the host name "${bare}" (${(err as NodeJS.ErrnoException).code ?? 'lookup failed'})`, {
      hint: 'check the name, or give the inspector address as an IP',
      cause: err,
    });
  }
}

/**
 * GET a JSON document from an inspector's HTTP endpoint, within the deadline.
 *
 * Plain `node:http`, not `fetch`: fetch refuses the "bad ports" of the Fetch
 * standard (1, 6000, 6665-6669, 10080, … are legal inspector ports), and on
 * Node 20 it never settled against a server that accepts and drops the
 * connection (seen in the tests: the CLI exited 0 having done nothing).
 */
async function getJson<T>(hostName: string, port: number, path: string, options: ResolveOptions): Promise<T> {
  const host = await addressOf(hostName);
  throwIfAborted(options.signal);
  const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpGet({ host: host.replace(/^\[|\]$/g, ''), port, path, timeout: options.timeoutMs, headers: { accept: 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        // An inspector's target list is a few KiB; anything huge is not one.
        if (text.length < 4 * 1024 * 1024) text += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', reject);
    });
    const deadline = setTimeout(() => req.destroy(Object.assign(new Error('deadline'), { code: 'DEADLINE' })), options.timeoutMs);
    const onAbort = (): void => {
      req.destroy(Object.assign(new Error('aborted'), { code: 'ABORTED' }));
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    req.on('timeout', () => req.destroy(Object.assign(new Error('socket timeout'), { code: 'DEADLINE' })));
    req.on('error', reject);
    req.on('close', () => {
      clearTimeout(deadline);
      options.signal?.removeEventListener('abort', onAbort);
    });
  }).catch((err: unknown) => {
    throwIfAborted(options.signal);
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'DEADLINE') {
      throw new CaptureError('target_unreachable', `${host}:${port} did not answer ${path} within ${options.timeoutMs} ms`, {
        hint: 'the target may be frozen, or a firewall drops the connection',
      });
    }
    if (code !== undefined && !UNREACHABLE_CODES.has(code)) {
      // Something accepted the connection but did not speak HTTP like an inspector.
      throw new CaptureError('target_not_found', `${host}:${port} accepted the connection but did not answer like a V8 inspector (${code})`, {
        hint: 'check the port: it should be the inspector (--inspect) or remote debugging port, not the app port',
        cause: err,
      });
    }
    throw new CaptureError('target_unreachable', `cannot reach an inspector at ${host}:${port} (${code ?? 'connection failed'})`, {
      hint: 'is the process running with --inspect (or the browser with --remote-debugging-port) on that address?',
      cause: err,
    });
  });
  if (status < 200 || status >= 300) {
    throw new CaptureError('target_not_found', `${host}:${port} answered ${path} with HTTP ${status}: it is not a V8 inspector`, {
      hint: 'check the port: it should be the inspector (--inspect) or remote debugging port, not the app port',
    });
  }
  try {
    return JSON.parse(body) as T;
  } catch {
    throw new CaptureError('target_not_found', `${host}:${port} answered ${path} with something that is not JSON: it is not a V8 inspector`, {
      hint: 'check the port: it should be the inspector (--inspect) or remote debugging port, not the app port',
    });
  }
}
