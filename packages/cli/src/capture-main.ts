/** `heapcap capture`: one capture straight from the command line (no Redis, no service). */
import { CaptureError, toCaptureError } from '@heapcap/errors';
import { createSink, newCaptureId } from '@heapcap/storage';
import type { HeapcapConfig } from '@heapcap/config';
import { parseCaptureArgs, CAPTURE_USAGE } from './capture-args.ts';
import { runCapture } from './run-capture.ts';
import { ProgressLine, summaryTable } from './format.ts';
import { EXIT, exitCodeFor } from './exit-codes.ts';
import { printError } from './print-error.ts';

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
      ...(env['HEAPCAP_S3_ENDPOINT'] === undefined ? {} : { s3Endpoint: env['HEAPCAP_S3_ENDPOINT'] }),
    });
  } catch (err) {
    const error = toCaptureError(err, 'invalid_input');
    printError(error, json);
    return exitCodeFor(error.code);
  }

  // SIGINT/SIGTERM cancel cleanly: the sink removes its temp file or aborts its upload.
  const controller = new AbortController();
  const onSignal = (sig: NodeJS.Signals): void => controller.abort(new Error(`received ${sig}`));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const progress = !cmd.quiet && process.stderr.isTTY ? new ProgressLine(process.stderr) : undefined;
  try {
    const out = await runCapture({
      captureId: newCaptureId(),
      targetId: cmd.targetId,
      endpoint: cmd.endpoint,
      sink: createSink(cmd.storage),
      gzip: cmd.gzip,
      warm: cmd.warm,
      gc: cmd.gc,
      exposeInternals: cmd.exposeInternals,
      captureNumericValue: cmd.captureNumericValue,
      memoryCeilingBytes: cmd.memoryCeilingBytes,
      spillDir: cmd.spillDir,
      snapshotTimeoutMs: cmd.snapshotTimeoutMs,
      trigger: { kind: 'cli', who: env['USER'] ?? env['LOGNAME'] ?? 'unknown', reason: cmd.reason },
      signal: controller.signal,
      ...(progress === undefined ? {} : { onProgress: (p) => progress.update(p) }),
    });
    progress?.clear();
    if (cmd.json) {
      process.stdout.write(`${JSON.stringify(out.manifest, null, 2)}\n`);
    } else {
      const manifestLocation = out.manifest.artifact.location.replace(/\.heapsnapshot(\.gz)?$/, '.manifest.json');
      process.stdout.write(`${summaryTable(out.manifest, manifestLocation)}\n`);
    }
    return EXIT.ok;
  } catch (err) {
    progress?.clear();
    const error = err instanceof CaptureError ? err : toCaptureError(err);
    printError(error, cmd.json);
    return exitCodeFor(error.code);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
