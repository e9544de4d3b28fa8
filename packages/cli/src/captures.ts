/**
 * `heapcap captures list|show|download|pin|unpin|delete|analyse`: captures
 * through /v1/captures. `download` writes `<target>-<UTC time>-<id>.heapsnapshot`
 * (the JSON DevTools loads; `--gz` keeps the stored gzip).
 */
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Analysis } from '@heapcap/analysis';
import { formatMiB } from '@heapcap/capture';
import { downloadFileName } from '@heapcap/storage/file';
import { parseDuration } from '@heapcap/config';
import { EXIT, exitCodeForApiError } from './exit-codes.ts';
import { openLine } from './open-line.ts';
import { formatAnalysis } from './analysis-format.ts';
import { flag, intFlag, pause, runGroup, secondsFlag, sub, UsageError, type Subcommand } from './api-command.ts';
import { callApi, downloadApi, type CliIo } from './status-client.ts';
import { formatRecord } from './status-format.ts';
import { formatTable, utcTime } from './table.ts';

/** A capture record (the fields the commands use). */
interface CaptureView {
  id: string;
  targetId: string;
  status: string;
  phase: string | null;
  trigger: { kind: string; who: string; reason?: string };
  error: { code: string; message: string; hint?: string } | null;
  artifact: { location: string; bytesStored: number; bytesUncompressed: number; kind?: string } | null;
  pinned?: { by: string; reason?: string } | null;
  createdAt: string;
  finishedAt: string | null;
}

function formatCaptures(items: readonly CaptureView[]): string {
  if (items.length === 0) return 'no captures (take one: heapcap trigger TARGET --wait 60)';
  return formatTable(
    ['ID', 'TARGET', 'STATUS', 'TRIGGER', 'CREATED (UTC)', 'SIZE', 'PINNED'],
    items.map((c) => [
      c.id,
      c.targetId,
      c.status === 'failed' && c.error !== null ? `failed (${c.error.code})` : c.status,
      `${c.trigger.kind} ${c.trigger.who}`,
      utcTime(c.createdAt),
      c.artifact === null ? '-' : `${formatMiB(c.artifact.bytesUncompressed)}${c.artifact.kind === 'sampling-profile' ? ' (profile)' : ''}`,
      c.pinned ? 'yes' : '-',
    ]),
  );
}

/** The file `captures download` writes (the name the API's Content-Disposition gives too). */
export function downloadName(c: Pick<CaptureView, 'id' | 'targetId' | 'createdAt' | 'artifact'>, gzip: boolean): string {
  return downloadFileName({ id: c.id, targetId: c.targetId, createdAt: c.createdAt, kind: c.artifact?.kind === 'sampling-profile' ? 'sampling-profile' : 'snapshot' }, gzip);
}

const id = (p: string[]): string => encodeURIComponent(p[0]!);

async function getCapture(c: { api: Parameters<typeof callApi>[0] }, captureId: string): Promise<CaptureView> {
  return ((await callApi(c.api, 'GET', `/v1/captures/${encodeURIComponent(captureId)}`, undefined, 30_000)).body as { capture: CaptureView }).capture;
}

/** Counts the bytes that pass (what was written, for the summary line). */
function counter(): { stream: Transform; bytes: () => number } {
  let n = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _enc, done) {
      n += chunk.length;
      done(null, chunk);
    },
  });
  return { stream, bytes: () => n };
}

/** Writes a download's body to `out` through `out.part` (renamed when whole, removed on failure); the bytes written. */
export async function saveBody(res: Response, out: string): Promise<number> {
  const part = `${out}.part`;
  await mkdir(dirname(out), { recursive: true });
  const count = counter();
  try {
    await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), count.stream, createWriteStream(part));
    await rename(part, out);
  } catch (err) {
    await rm(part, { force: true });
    throw err;
  }
  return count.bytes();
}

type AnalysisBody = { capture: CaptureView; state: { status: string; error?: { code: string; message: string; hint?: string } }; analysis: Analysis | null };

export const CAPTURES_SUBCOMMANDS: Record<string, Subcommand> = {
  list: sub({
    args: [],
    flags: { target: { type: 'string' }, status: { type: 'string' }, trigger: { type: 'string' }, since: { type: 'string' }, until: { type: 'string' }, limit: { type: 'string' } },
    summary: 'captures, newest first',
    options: `  --target ID         of one target
  --status S          queued, running, succeeded, failed or cancelled
  --trigger KIND      rest, cli, slack, schedule or watch
  --since, --until T  created in [since, until) (ISO 8601, e.g. 2026-11-26T08:00:00Z)
  --limit N           at most N (1-100, default 20)
`,
    examples: ['heapcap captures list --target checkout-1 --status succeeded', 'heapcap captures list --since 2026-11-26T00:00:00Z --limit 100 --json'],
    targetOf: (_p, v) => flag(v, 'target'),
    async run(c) {
      const q = new URLSearchParams();
      for (const k of ['target', 'status', 'trigger', 'since', 'until'] as const) {
        const v = flag(c.values, k);
        if (v !== undefined) q.set(k, v);
      }
      const limit = intFlag(c.values, 'limit', 1, 100);
      if (limit !== undefined) q.set('limit', String(limit));
      const data = (await callApi(c.api, 'GET', `/v1/captures${q.size > 0 ? `?${q.toString()}` : ''}`, undefined, 30_000)).body as { items: CaptureView[]; nextCursor: string | null };
      c.print(data, () => `${formatCaptures(data.items)}${data.nextCursor === null ? '' : `\n  (more: narrow with --since/--until, or --json for nextCursor)`}`);
      return EXIT.ok;
    },
  }),
  show: sub({
    args: ['ID'],
    flags: {},
    summary: 'one capture: status, phase, timings, artifact (as heapcap status)',
    examples: ['heapcap captures show 01M7ZHH716228KMD1V49A92AEZ'],
    async run(c) {
      const data = (await callApi(c.api, 'GET', `/v1/captures/${id(c.positionals)}`, undefined, 30_000)).body as { capture: Parameters<typeof formatRecord>[0] };
      c.print(data, () => `${formatRecord(data.capture)}\n${openLine(c.api.url, { capture: data.capture.id }).trimEnd()}`);
      return EXIT.ok;
    },
  }),
  download: sub({
    args: ['ID'],
    flags: { gz: { type: 'boolean' }, dir: { type: 'string' }, output: { type: 'string', short: 'o' } },
    summary: 'save the snapshot as <target>-<UTC time>-<id>.heapsnapshot',
    options: `  --gz           keep the stored gzip (.heapsnapshot.gz, smaller; gunzip it before loading it in DevTools)
  --dir DIR      write into DIR (default: the current directory)
  -o, --output FILE  write to FILE instead
`,
    examples: ['heapcap captures download 01M7ZHH716228KMD1V49A92AEZ', 'heapcap captures download 01M7ZHH716228KMD1V49A92AEZ --gz --dir /tmp'],
    async run(c) {
      const record = await getCapture(c, c.positionals[0]!);
      const gzip = c.values.gz === true;
      const out = resolve(flag(c.values, 'output') ?? join(flag(c.values, 'dir') ?? '.', downloadName(record, gzip)));
      const started = Date.now();
      // No timeout on the body: a 300 MB snapshot takes as long as the link needs. Only the answer is bounded.
      const res = await downloadApi(c.api, `/v1/captures/${id(c.positionals)}/artifact${gzip ? '?encoding=gzip' : ''}`, {}, 60_000);
      const bytes = await saveBody(res, out);
      const seconds = Math.max(0.001, (Date.now() - started) / 1000);
      const result = { file: out, bytes, gzip, seconds, capture: record.id, target: record.targetId };
      c.print(result, () =>
        [
          `wrote ${out} (${formatMiB(bytes)} in ${seconds.toFixed(1)} s)`,
          gzip
            ? `  DevTools loads uncompressed files: gunzip ${basename(out)}, then Memory panel → Load`
            : `  open it in Chrome DevTools: Memory panel → Load → ${basename(out)} (any DevTools window: chrome://inspect → Open dedicated DevTools for Node)`,
        ].join('\n'),
      );
      return EXIT.ok;
    },
  }),
  pin: sub({
    args: ['ID'],
    flags: { reason: { type: 'string' } },
    summary: 'keep a capture: retention never deletes it',
    options: '  --reason TEXT  why (shown on the capture, audit log)\n',
    examples: ['heapcap captures pin 01M7ZHH716228KMD1V49A92AEZ --reason "before/after the 4.2 deploy"'],
    async run(c) {
      const reason = flag(c.values, 'reason');
      const data = (await callApi(c.api, 'POST', `/v1/captures/${id(c.positionals)}/pin`, reason === undefined ? {} : { reason }, 30_000)).body as { capture: CaptureView };
      c.print(data, () => `capture ${data.capture.id} pinned: retention keeps it until heapcap captures unpin ${data.capture.id}`);
      return EXIT.ok;
    },
  }),
  unpin: sub({
    args: ['ID'],
    flags: {},
    summary: 'let retention apply to a capture again',
    examples: ['heapcap captures unpin 01M7ZHH716228KMD1V49A92AEZ'],
    async run(c) {
      const data = (await callApi(c.api, 'DELETE', `/v1/captures/${id(c.positionals)}/pin`, undefined, 30_000)).body as { capture: CaptureView };
      c.print(data, () => `capture ${data.capture.id} unpinned: retention applies to it again`);
      return EXIT.ok;
    },
  }),
  delete: sub({
    args: ['ID'],
    flags: {},
    summary: "cancel a queued or running capture, or delete a finished one's artifact",
    examples: ['heapcap captures delete 01M7ZHH716228KMD1V49A92AEZ'],
    async run(c) {
      const data = (await callApi(c.api, 'DELETE', `/v1/captures/${id(c.positionals)}`, undefined, 30_000)).body as { capture: CaptureView; result: string };
      const what: Record<string, string> = { cancelled: 'cancelled (it was queued)', cancelling: 'being cancelled: its worker is stopping it', artifact_deleted: 'artifact deleted (the record stays)', finished: 'nothing to do (no artifact)' };
      c.print(data, () => `capture ${data.capture.id}: ${what[data.result] ?? data.result}`);
      return EXIT.ok;
    },
  }),
  analyse: sub({
    args: ['ID'],
    flags: { top: { type: 'string' }, wait: { type: 'string' } },
    summary: 'retained sizes and the largest dominators, computed by a worker',
    options: `  --top N        rows shown (default 20)
  --wait DURATION  give up waiting after this long (default 10m; the analysis goes on: run the command again)
`,
    examples: ['heapcap captures analyse 01M7ZHH716228KMD1V49A92AEZ --top 10'],
    async run(c) {
      const top = intFlag(c.values, 'top', 1, 10_000) ?? 20;
      const waitS = secondsFlag(c.values, 'wait', parseDuration) ?? 600;
      if (waitS > 24 * 3600) throw new UsageError('--wait is at most 24h');
      const deadline = Date.now() + waitS * 1000;
      let body = (await callApi(c.api, 'POST', `/v1/captures/${id(c.positionals)}/analysis`, undefined, 30_000)).body as AnalysisBody;
      if (!c.json) c.io.stderr.write(`analysis of ${body.capture.id} ${body.state.status}\n`);
      while (body.state.status === 'queued' || body.state.status === 'running') {
        if (Date.now() > deadline) {
          c.io.stderr.write(`the analysis is still ${body.state.status} after ${waitS} s; it goes on: run heapcap captures analyse ${body.capture.id} again later\n`);
          return EXIT.unavailable;
        }
        await pause(500);
        body = (await callApi(c.api, 'GET', `/v1/captures/${id(c.positionals)}/analysis`, undefined, 30_000)).body as AnalysisBody;
      }
      if (body.state.status === 'failed' || body.analysis === null) {
        const e = body.state.error;
        if (c.json) c.print(body, () => '');
        c.io.stderr.write(`${e?.code ?? 'internal'}: ${e?.message ?? 'the analysis failed'}\n${e?.hint === undefined ? '' : `  check: ${e.hint}\n`}`);
        return exitCodeForApiError(e?.code);
      }
      const analysis = body.analysis;
      c.print(body, () => formatAnalysis(analysis, top).trimEnd());
      return EXIT.ok;
    },
  }),
};

/** Run `heapcap captures`. */
export function capturesMain(argv: string[], env: Record<string, string | undefined>, io?: CliIo): Promise<number> {
  return runGroup('captures', 'captures taken through the API (the service)', CAPTURES_SUBCOMMANDS, argv, env, io);
}
