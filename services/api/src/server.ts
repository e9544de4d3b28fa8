/**
 * Entry point of the API alone: `node --import tsx services/api/src/server.ts [--dev]`.
 * (`heapcap serve` runs api + worker in one process through startApi.)
 * Parses configuration once, connects, syncs the targets file into the
 * registry, listens; on SIGTERM/SIGINT stops within a time limit.
 */
import { parseConfigAtEntry } from '@heapcap/config';
import { createQueue, loadTargetsFile } from '@heapcap/queue';
import { createSink, S3Sink } from '@heapcap/storage';
import { resolveAuthMode } from './auth/mode.ts';
import { createLogger } from './logger.ts';
import { startApi } from './start.ts';

const SHUTDOWN_MS = 10_000;

async function main(): Promise<number> {
  const config = parseConfigAtEntry(process.env, (text) => process.stderr.write(text));
  if (config === undefined) return 2;
  const logger = createLogger(config.logLevel);
  const auth = await resolveAuthMode(config, { dev: process.argv.includes('--dev') });
  const queue = createQueue({ redisUrl: config.redisUrl });
  try {
    await queue.ping(3_000);
  } catch {
    process.stderr.write(`Redis at ${config.redisUrl} is not reachable. Start one (e.g. \`redis-server --port 6379\`) or set HEAPCAP_REDIS_URL.\n`);
    await queue.close();
    return 1;
  }
  const targets = await loadTargetsFile(config.targetsFile, { missingOk: true });
  const synced = await queue.targets.syncFromFile(targets);
  logger.info({ file: config.targetsFile, ...synced }, 'targets file synced into the registry');
  const sink = createSink(config.storage);
  const api = await startApi(config, { queue, sink, auth, logger });

  await new Promise<void>((resolve) => {
    const stop = (signal: string): void => {
      logger.info({ signal }, 'shutting down');
      resolve();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  await api.close(SHUTDOWN_MS);
  await queue.close();
  if (sink instanceof S3Sink) sink.close();
  logger.flush();
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`heapcap api: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
