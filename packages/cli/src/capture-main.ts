/** `heapcap capture`: one capture straight from the command line (no Redis, no service). */
import { CaptureError, toCaptureError } from '@heapcap/errors';
import { formatMiB, headroomLines, lowerCpuPriority, preflightOnly, releaseInspector } from '@heapcap/capture';
import { newCaptureId } from '@heapcap/config';
import { createFileSink, type ArtifactStore } from '@heapcap/storage/file';
import type { StorageConfig } from '@heapcap/config';
import type { HeapcapConfig } from '@heapcap/config';
import { parseCaptureArgs, CAPTURE_USAGE } from './capture-args.ts';
import { runCapture } from '@heapcap/pipeline';
import { inspectorText, samplingTable, summaryTable } from './format.ts';
import { engineProgress, ProgressDisplay } from './progress.ts';
import { EXIT, exitCodeFor } from './exit-codes.ts';
import { printError } from './print-error.ts';
import type { CaptureCommand } from './capture-args.ts';

/** Run `heapcap capture`; returns the exit code. */
export async function captureMain(argv: string[], config: HeapcapConfig, env: Record<string, string | undefined>): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(CAPTURE_USAGE);
    return EXIT.ok;
  }
  const json = argv.includes('--json');
  let cmd;
  try {
    cmd = parseCaptureArgs(argv, {
      storage: config.storage,
      memoryCeilingBytes: config.memoryCeilingBytes,
      spillDir: config.spillDir,
      transport: config.snapshotTransport,
      pipeDir: config.pipeDir,
      redact: config.redact,
      s3: config.s3,
    });
  } catch (err) {
    const error = toCaptureError(err, 'invalid_input');
    printError(error, json);
    return exitCodeFor(error.code);
  }

  // The target gets the CPU first while it is paused (cpu-priority.ts).
  lowerCpuPriority(config.nice);
  // SIGINT/SIGTERM cancel cleanly: the sink removes its temp file or aborts its upload.
  const controller = new AbortController();
  const onSignal = (sig: NodeJS.Signals): void => controller.abort(new Error(`received ${sig}`));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // On a terminal a line redrawn 4 times a second; otherwise plain lines (progress.ts).
  const progress = cmd.quiet ? undefined : new ProgressDisplay(process.stderr, process.stderr.isTTY);
  try {
    if (cmd.dryRun) return await dryRun(cmd, controller.signal);
    if (cmd.sampling !== undefined) return await sample(cmd, cmd.sampling, env, controller.signal, progress);
    const out = await runCapture({
      kind: 'snapshot',
      ids: { captureId: newCaptureId(), targetId: cmd.targetId },
      store: await storeFor(cmd.storage),
      gzip: cmd.gzip,
      trigger: triggerOf(cmd, env),
      capture: {
        endpoint: cmd.endpoint,
        warm: cmd.warm,
        gc: cmd.gc,
        exposeInternals: cmd.exposeInternals,
        captureNumericValue: cmd.captureNumericValue,
        memoryCeilingBytes: cmd.memoryCeilingBytes,
        spillDir: cmd.spillDir,
        transport: cmd.transport,
        pipeDir: cmd.pipeDir,
        timeouts: { snapshotMs: cmd.snapshotTimeoutMs },
        force: cmd.force,
        memoryLimitBytes: cmd.memoryLimitBytes,
        signal: controller.signal,
        onProgress: progress === undefined ? undefined : engineProgress(progress),
      },
      summary: config.summaryLargestStrings > 0 ? { largestStrings: config.summaryLargestStrings } : {},
      redact: cmd.redact,
    });
    progress?.stop();
    if (cmd.json) {
      process.stdout.write(`${JSON.stringify(out.manifest, null, 2)}\n`);
    } else {
      process.stdout.write(`${summaryTable(out.manifest, out.manifestObject.location)}\n`);
      const { estimate, peak, forced } = out.manifest;
      const actual = peak.actualExtraBytes === null ? `unknown (${peak.note ?? ''})` : `+${formatMiB(peak.actualExtraBytes)}`;
      process.stdout.write(`  headroom   estimate +${formatMiB(estimate.extraBytes)}, actual ${actual}${forced ? ' (forced)' : ''}\n`);
      process.stdout.write(
        out.summary.kind === 'stored'
          ? `  summary    ${out.summary.location} (${out.summary.summary.classes.length} classes; heapcap diff compares two)\n`
          : out.summary.kind === 'failed'
            ? `  summary    none: ${out.summary.code}: ${out.summary.message} (the capture is complete)\n`
            : '',
      );
    }
    return EXIT.ok;
  } catch (err) {
    progress?.stop();
    const error = err instanceof CaptureError ? err : toCaptureError(err);
    printError(error, cmd.json);
    return exitCodeFor(error.code);
  } finally {
    progress?.stop();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** `--sampling`: an allocation sampling profile, stored as `<id>.heapprofile[.gz]` beside its manifest. */
async function sample(cmd: CaptureCommand, sampling: NonNullable<CaptureCommand['sampling']>, env: Record<string, string | undefined>, signal: AbortSignal, progress: ProgressDisplay | undefined): Promise<number> {
  const out = await runCapture({
    kind: 'sampling',
    ids: { captureId: newCaptureId(), targetId: cmd.targetId },
    store: await storeFor(cmd.storage),
    gzip: cmd.gzip,
    trigger: triggerOf(cmd, env),
    sampling: {
      endpoint: cmd.endpoint,
      durationMs: sampling.seconds * 1000,
      samplingIntervalBytes: sampling.intervalBytes,
      signal,
      onProgress: progress === undefined ? undefined : engineProgress(progress),
    },
  });
  progress?.stop();
  process.stdout.write(cmd.json ? `${JSON.stringify(out.manifest, null, 2)}\n` : `${samplingTable(out.manifest, out.manifestObject.location)}\n`);
  return EXIT.ok;
}

/** Who ran the command, and why (into the manifest). */
function triggerOf(cmd: CaptureCommand, env: Record<string, string | undefined>): { kind: 'cli'; who: string; reason: string | undefined } {
  return { kind: 'cli', who: env['USER'] ?? env['LOGNAME'] ?? 'unknown', reason: cmd.reason };
}

/** `--dry-run`: the preflight facts and the headroom decision; nothing is taken. */
async function dryRun(cmd: CaptureCommand, signal: AbortSignal): Promise<number> {
  const report = await preflightOnly({
    endpoint: cmd.endpoint,
    force: cmd.force,
    memoryLimitBytes: cmd.memoryLimitBytes,
    signal,
  });
  // --pid: a dry run leaves the target's inspector as it found it, too.
  const inspector = await releaseInspector(report.endpoint);
  if (cmd.json) {
    process.stdout.write(`${JSON.stringify({ dryRun: true, target: report.endpoint.description, runtime: report.facts, ...report.headroom, inspector }, null, 2)}\n`);
  } else {
    const f = report.facts;
    process.stdout.write(`dry run: ${report.endpoint.description} (${f.product} ${f.version}, V8 ${f.v8Version ?? '?'}${f.pid === undefined ? '' : `, pid ${f.pid}`}); nothing taken\n`);
    process.stdout.write(`${headroomLines(report.headroom).join('\n')}\n`);
    if (inspector.openedByHeapcap) process.stdout.write(`  inspector     ${inspectorText(inspector)}\n`);
  }
  return report.headroom.action === 'refuse' ? EXIT.refused : EXIT.ok;
}

/** The store for this capture; the S3 client is loaded only when S3 is the target. */
async function storeFor(storage: StorageConfig): Promise<ArtifactStore> {
  if (storage.kind === 'file') return createFileSink({ dir: storage.dir });
  const { createStore } = await import('@heapcap/storage');
  return createStore(storage);
}
