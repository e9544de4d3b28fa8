/**
 * The demo's trigger is the runbook's one curl: it runs the real `curl` when
 * one is installed (so what is printed is what ran), else the same request
 * with fetch, printing the equivalent curl line.
 */
import { spawn, spawnSync } from 'node:child_process';

/** A POST as curl would send it. */
export interface CurlPost {
  url: string;
  body: string;
  /** Deadline for the whole request, seconds. */
  maxTimeS: number;
}

/** The response: HTTP status and body text. */
export interface CurlResult {
  status: number;
  body: string;
  via: 'curl' | 'fetch';
}

/** Quote `s` for a POSIX shell (single quotes, unless nothing needs quoting). */
export function shq(s: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

function curlArgs(p: CurlPost): string[] {
  return ['-sS', '-X', 'POST', p.url, '-H', 'content-type: application/json', '-d', p.body];
}

/** The command line a user would type. */
export function curlCommand(p: CurlPost): string {
  return ['curl', ...curlArgs(p)].map(shq).join(' ');
}

/** True when `curl` is on PATH. */
export function haveCurl(): boolean {
  return spawnSync('curl', ['--version'], { stdio: 'ignore' }).status === 0;
}

const STATUS_MARK = '\n__heapcap_demo_http_status=';

/** Send the POST with curl (or fetch when `useCurl` is false); rejects on a transport error or when `signal` aborts. */
export async function post(p: CurlPost, useCurl: boolean, signal: AbortSignal): Promise<CurlResult> {
  if (!useCurl) {
    const res = await fetch(p.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: p.body, signal: AbortSignal.any([signal, AbortSignal.timeout(p.maxTimeS * 1000)]) });
    return { status: res.status, body: await res.text(), via: 'fetch' };
  }
  // The same request plus -w to learn the status; --max-time so curl cannot outlive the demo's patience.
  const args = [...curlArgs(p), '--max-time', String(p.maxTimeS), '-w', `${STATUS_MARK}%{http_code}`];
  const child = spawn('curl', args, { stdio: ['ignore', 'pipe', 'pipe'], signal });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  const at = out.lastIndexOf(STATUS_MARK);
  if (code !== 0 || at < 0) throw new Error(`curl failed (exit ${code}): ${err.trim() || out.trim()}`);
  return { status: Number(out.slice(at + STATUS_MARK.length)), body: out.slice(0, at), via: 'curl' };
}
