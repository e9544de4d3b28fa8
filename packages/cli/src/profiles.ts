/**
 * `heapcap profiles list|show|download TARGET|ID`: allocation sampling
 * profiles taken through the API (captures with `artifact.kind`
 * `sampling-profile`). `show` prints live bytes by allocation site and the
 * top stack; `download` writes the `.heapprofile` (DevTools) or, with
 * `--pprof`, the gzipped pprof (`go tool pprof`, Pyroscope, Grafana).
 */
import { join, resolve } from 'node:path';
import { formatFrame, type ProfileDiff, type ProfileSummary } from '@heapcap/analysis';
import { formatMiB } from '@heapcap/capture';
import { EXIT } from './exit-codes.ts';
import { flag, intFlag, runGroup, sub, type Subcommand } from './api-command.ts';
import { callApi, downloadApi, RestError, type ApiTarget, type CliIo } from './status-client.ts';
import { downloadName, saveBody } from './captures.ts';
import { formatTable, utcTime } from './table.ts';

/** A capture record (the fields these commands use). */
interface ProfileCapture {
  id: string;
  targetId: string;
  status: string;
  createdAt: string;
  options: { samplingSeconds?: number; samplingIntervalBytes?: number };
  trigger: { kind: string; who: string };
  artifact: { bytesUncompressed: number; kind?: string } | null;
}

/** Capture ids are ULIDs: 26 characters of Crockford's base 32. Anything else names a target. */
const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/i;

/** The target's succeeded sampling profiles, newest first, at most `limit`. The API filters by kind; a page can
 * come back short with a cursor (it bounds the records one call examines), so the cursor is followed. */
async function profilesOf(api: ApiTarget, target: string, limit: number): Promise<ProfileCapture[]> {
  const found: ProfileCapture[] = [];
  let cursor: string | null = null;
  do {
    const q = new URLSearchParams({ target, status: 'succeeded', kind: 'sampling', limit: String(limit - found.length) });
    if (cursor !== null) q.set('cursor', cursor);
    const data = (await callApi(api, 'GET', `/v1/captures?${q.toString()}`, undefined, 30_000)).body as { items: ProfileCapture[]; nextCursor: string | null };
    found.push(...data.items);
    cursor = data.nextCursor;
  } while (cursor !== null && found.length < limit);
  return found;
}

/** The capture an argument names: an id as it is, a target's newest profile; `not_found` when the target has none. */
async function resolveProfile(api: ApiTarget, arg: string): Promise<ProfileCapture> {
  if (ULID.test(arg)) return ((await callApi(api, 'GET', `/v1/captures/${encodeURIComponent(arg)}`, undefined, 30_000)).body as { capture: ProfileCapture }).capture;
  const [newest] = await profilesOf(api, arg, 1);
  if (newest === undefined) {
    throw new RestError(404, 'profile_not_found', `target ${arg} has no succeeded allocation profile; take one: heapcap trigger ${arg} --sampling 30s --wait 60`);
  }
  return newest;
}

function formatProfiles(items: readonly ProfileCapture[], target: string): string {
  if (items.length === 0) return `no allocation profiles of ${target} (take one: heapcap trigger ${target} --sampling 30s --wait 60)`;
  return formatTable(
    ['ID', 'TARGET', 'CREATED (UTC)', 'SAMPLED', 'INTERVAL', 'SIZE', 'TRIGGER'],
    items.map((c) => [
      c.id,
      c.targetId,
      utcTime(c.createdAt),
      c.options.samplingSeconds === undefined ? '-' : `${c.options.samplingSeconds} s`,
      c.options.samplingIntervalBytes === undefined ? '-' : `${Math.round(c.options.samplingIntervalBytes / 1024)} KiB`,
      c.artifact === null ? '-' : formatMiB(c.artifact.bytesUncompressed),
      `${c.trigger.kind} ${c.trigger.who}`,
    ]),
  );
}

/** Live bytes by allocation site, then the top stack (site first). */
export function formatProfileSummary(capture: { id: string; targetId: string }, p: ProfileSummary): string {
  const share = (bytes: number): string => (p.totalBytes > 0 ? `${((100 * bytes) / p.totalBytes).toFixed(1)}%` : '-');
  const lines = [
    `allocation profile ${capture.id} of ${capture.targetId}: ${formatMiB(p.totalBytes)} live in ${p.samples} samples (sampled: small objects statistically; what was allocated before sampling started is not in it)`,
    '',
    formatTable(
      ['LIVE', 'SHARE', 'OBJECTS', 'ALLOCATED AT'],
      p.sites.map((s) => [formatMiB(s.bytes), share(s.bytes), String(s.objects), formatFrame(s)]),
    ),
  ];
  if (p.sitesOmitted > 0) lines.push(`  (${p.sitesOmitted} more sites: --top N)`);
  const stack = p.stacks[0];
  if (stack !== undefined) lines.push('', `top stack (${formatMiB(stack.bytes)}):`, ...stack.frames.map((f, i) => `  ${i === 0 ? '' : '← '}${formatFrame(f)}`));
  return lines.join('\n');
}

/** Growth by allocation site between two profiles: the sites that grew most, then those that shrank. */
export function formatProfileDiff(d: ProfileDiff, top: number, baseLabel: string, headLabel: string): string {
  const signed = (bytes: number): string => `${bytes < 0 ? '-' : '+'}${formatMiB(Math.abs(bytes))}`;
  const rows = (sites: ProfileDiff['grown']): string[][] => sites.slice(0, top).map((s) => [signed(s.bytesDelta), formatMiB(s.baseBytes), formatMiB(s.headBytes), formatFrame(s)]);
  const lines = [
    `allocation sites from ${baseLabel} to ${headLabel}: live ${signed(d.totalBytesDelta)} (${formatMiB(d.base.totalBytes)} → ${formatMiB(d.head.totalBytes)}, sampled)`,
    '',
    d.grown.length === 0 ? 'no site grew' : formatTable(['GROWTH', 'BASE', 'HEAD', 'ALLOCATED AT'], rows(d.grown)),
  ];
  if (d.shrunk.length > 0) lines.push('', 'shrunk:', formatTable(['CHANGE', 'BASE', 'HEAD', 'ALLOCATED AT'], rows(d.shrunk)));
  return `${lines.join('\n')}\n`;
}

const TARGET_OR_ID = 'TARGET|ID';

export const PROFILES_SUBCOMMANDS: Record<string, Subcommand> = {
  list: sub({
    args: ['TARGET'],
    flags: { limit: { type: 'string' } },
    summary: "a target's allocation profiles, newest first",
    options: '  --limit N      at most N (1-100, default 20)\n',
    examples: ['heapcap profiles list checkout-1'],
    targetOf: (p) => p[0],
    async run(c) {
      const target = c.positionals[0]!;
      const items = await profilesOf(c.api, target, intFlag(c.values, 'limit', 1, 100) ?? 20);
      c.print({ items }, () => formatProfiles(items, target));
      return EXIT.ok;
    },
  }),
  show: sub({
    args: [TARGET_OR_ID],
    flags: { top: { type: 'string' } },
    summary: 'live bytes by allocation site and the top stack (a target: its newest profile)',
    options: '  --top N        sites shown (1-10000, default 15)\n',
    examples: ['heapcap profiles show checkout-1', 'heapcap profiles show 01M7ZHH716228KMD1V49A92AEZ --top 40'],
    targetOf: (p) => (ULID.test(p[0]!) ? undefined : p[0]),
    async run(c) {
      const capture = await resolveProfile(c.api, c.positionals[0]!);
      const top = intFlag(c.values, 'top', 1, 10_000) ?? 15;
      const data = (await callApi(c.api, 'GET', `/v1/captures/${encodeURIComponent(capture.id)}/profile?limit=${top}`, undefined, 60_000)).body as { captureId: string; targetId: string; profile: ProfileSummary };
      c.print(data, () => formatProfileSummary(capture, data.profile));
      return EXIT.ok;
    },
  }),
  download: sub({
    args: [TARGET_OR_ID],
    flags: { pprof: { type: 'boolean' }, dir: { type: 'string' }, output: { type: 'string', short: 'o' } },
    summary: 'save the .heapprofile (DevTools), or with --pprof the gzipped pprof (go tool pprof)',
    options: `  --pprof        a gzipped pprof Profile (.pb.gz: inuse_space, inuse_objects) for go tool pprof, Pyroscope, Grafana
  --dir DIR      write into DIR (default: the current directory)
  -o, --output FILE  write to FILE instead
`,
    examples: ['heapcap profiles download checkout-1', 'heapcap profiles download 01M7ZHH716228KMD1V49A92AEZ --pprof && go tool pprof -top alloc-*.pb.gz'],
    targetOf: (p) => (ULID.test(p[0]!) ? undefined : p[0]),
    async run(c) {
      const capture = await resolveProfile(c.api, c.positionals[0]!);
      const pprof = c.values.pprof === true;
      const name = downloadName({ ...capture, artifact: { kind: 'sampling-profile', location: '', bytesStored: 0, bytesUncompressed: 0 } }, false);
      const out = resolve(flag(c.values, 'output') ?? join(flag(c.values, 'dir') ?? '.', pprof ? name.replace(/\.heapprofile$/, '.pb.gz') : name));
      const path = `/v1/captures/${encodeURIComponent(capture.id)}/${pprof ? 'profile?format=pprof' : 'artifact'}`;
      // The API answers 404 profile_not_found for a heap snapshot's pprof; its artifact route would hand over the snapshot: refuse that here.
      if (!pprof && capture.artifact?.kind !== 'sampling-profile') {
        throw new RestError(404, 'profile_not_found', `capture ${capture.id} is a heap snapshot, which has no allocation profile; download it with heapcap captures download ${capture.id}`);
      }
      const bytes = await saveBody(await downloadApi(c.api, path, {}, 60_000), out);
      const result = { file: out, bytes, format: pprof ? 'pprof' : 'heapprofile', capture: capture.id, target: capture.targetId };
      c.print(result, () =>
        [`wrote ${out} (${formatMiB(bytes)})`, pprof ? `  go tool pprof -top ${out}` : `  open it in Chrome DevTools: Memory panel → Load (a .heapprofile: Allocation sampling)`].join('\n'),
      );
      return EXIT.ok;
    },
  }),
};

/** Run `heapcap profiles`. */
export function profilesMain(argv: string[], env: Record<string, string | undefined>, io?: CliIo): Promise<number> {
  return runGroup('profiles', 'allocation sampling profiles taken through the API: where live memory was allocated', PROFILES_SUBCOMMANDS, argv, env, io);
}
