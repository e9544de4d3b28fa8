import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { OutputLog } from './output-log.ts';
import { PAGE_TITLE } from './page-server.ts';
import { tmpDir, waitFor } from './proc.ts';
import { onProcessExit } from './reaper.ts';

/** Flags every Chromium in this project's tests runs with (headless, no sandbox as root, no background traffic). */
export const CHROMIUM_FLAGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Options for {@link startChromium}. */
export interface ChromiumOptions {
  /** Extra command-line flags, after the mandatory ones. */
  args?: string[];
  /** Deadline for DevToolsActivePort to appear; default 30 s. */
  startTimeoutMs?: number;
}

/** A target as listed by `/json/list` (and returned by `/json/new`). */
export interface ChromiumTarget {
  id: string;
  type: string;
  title: string;
  url: string;
  webSocketDebuggerUrl: string;
}

/** Options for {@link Chromium.openPage}. */
export interface OpenPageOptions {
  /** Wait until the page's title equals/matches this; default PAGE_TITLE; `false` waits only for the listing. */
  title?: string | RegExp | false;
  /** Deadline for the page to be created and loaded; default 30 s. */
  timeoutMs?: number;
}

/** A running headless Chromium with remote debugging on 127.0.0.1. */
export interface Chromium {
  port: number;
  browserWsUrl: string;
  userDataDir: string;
  pid: number;
  /** Opens `url` in a new tab (`PUT /json/new?<url>`) and waits until its script has run (title check). */
  openPage(url: string, opts?: OpenPageOptions): Promise<ChromiumTarget>;
  /** `GET /json/list`: every target, including non-page ones. */
  listTargets(): Promise<ChromiumTarget[]>;
  stderrText(): string;
  /** Kills the whole process group and removes the user-data-dir. Idempotent. */
  close(): Promise<void>;
}

/** The Chromium binary: env HEAPCAP_CHROMIUM, else /usr/bin/chromium. */
export function chromiumBinary(): string {
  return process.env.HEAPCAP_CHROMIUM || '/usr/bin/chromium';
}

const HTTP_TIMEOUT_MS = 10_000;

/** Starts Chromium with a fresh user-data-dir and `--remote-debugging-port=0`, and reads the chosen port. */
export async function startChromium(opts: ChromiumOptions = {}): Promise<Chromium> {
  const dir = await tmpDir('heapcap-chromium');
  const binary = chromiumBinary();
  // detached: Chromium gets its own process group (/usr/bin/chromium is a shell
  // wrapper, and the browser forks zygote, GPU and renderer processes), so
  // close() can signal all of them at once.
  const child = spawn(
    binary,
    [...CHROMIUM_FLAGS, '--remote-debugging-port=0', `--user-data-dir=${dir.path}`, ...(opts.args ?? []), 'about:blank'],
    { detached: true, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const pgid = child.pid;
  const killGroup = (signal: NodeJS.Signals): void => {
    if (pgid === undefined) return;
    try {
      process.kill(-pgid, signal);
    } catch {
      // ESRCH: the group is already gone.
    }
  };
  const unregister = onProcessExit(() => {
    killGroup('SIGKILL');
    dir.cleanupSync();
  });
  const stderr = new OutputLog(child.stderr);
  let exited = false;
  const exit = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  void exit.then(() => {
    exited = true;
  });

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      killGroup('SIGTERM');
      const graceful = await Promise.race([exit.then(() => true), sleep(5_000).then(() => false)]);
      // SIGKILL the group either way: helpers may outlive the browser process.
      killGroup('SIGKILL');
      if (!graceful) await Promise.race([exit, sleep(5_000)]);
      await waitFor(() => !groupAlive(pgid), { timeoutMs: 5_000, what: `chromium process group ${pgid} to end` }).catch(
        () => undefined,
      );
      unregister();
      await dir.cleanup();
    })());

  let port: number;
  let browserPath: string;
  try {
    const activePort = join(dir.path, 'DevToolsActivePort');
    // First line: the port; second line: the browser target's path (/devtools/browser/<id>).
    const lines = await waitFor(
      async () => {
        if (exited) throw new Error(`chromium exited early`);
        const text = await readFile(activePort, 'utf8').catch(() => '');
        const [p, path] = text.split('\n');
        return p && /^\d+$/.test(p) && path ? ([Number(p), path] as const) : undefined;
      },
      { timeoutMs: opts.startTimeoutMs ?? 30_000, intervalMs: 50, what: `${activePort}` },
    );
    [port, browserPath] = lines;
  } catch (err) {
    await close();
    throw new Error(`chromium (${binary}) did not start: ${(err as Error).message}\nstderr:\n${stderr.text()}`, {
      cause: err,
    });
  }

  const base = `http://127.0.0.1:${port}`;
  const listTargets = async (): Promise<ChromiumTarget[]> => {
    const res = await fetch(`${base}/json/list`, { signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) });
    if (!res.ok) throw new Error(`GET /json/list: HTTP ${res.status}`);
    return (await res.json()) as ChromiumTarget[];
  };

  const openPage = async (url: string, o: OpenPageOptions = {}): Promise<ChromiumTarget> => {
    const timeoutMs = o.timeoutMs ?? 30_000;
    const title = o.title ?? PAGE_TITLE;
    // Chromium takes everything after the first '?' as the URL, query included.
    const res = await fetch(`${base}/json/new?${url}`, { method: 'PUT', signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) throw new Error(`PUT /json/new?${url}: HTTP ${res.status} ${await res.text()}`);
    const created = (await res.json()) as ChromiumTarget;
    return waitFor(
      async () => {
        const entry = (await listTargets()).find((t) => t.id === created.id);
        if (!entry) return undefined;
        if (title === false) return entry;
        const ok = typeof title === 'string' ? entry.title === title : title.test(entry.title);
        return ok ? entry : undefined;
      },
      { timeoutMs, intervalMs: 100, what: `page ${url} to load (title ${String(title)})` },
    );
  };

  return {
    port,
    browserWsUrl: `ws://127.0.0.1:${port}${browserPath}`,
    userDataDir: dir.path,
    pid: pgid as number,
    openPage,
    listTargets,
    stderrText: () => stderr.text(),
    close,
  };
}

function groupAlive(pgid: number | undefined): boolean {
  if (pgid === undefined) return false;
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}
