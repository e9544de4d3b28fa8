/**
 * Entry point of the worker alone: `node --import tsx services/worker/src/main.ts`.
 * (`heapcap serve` runs the api and this worker in one process.)
 * Parses configuration once, connects, syncs the targets file, consumes
 * captures; on SIGTERM finishes or hands back its captures within the limit.
 */
import { parseConfigAtEntry } from '@heapcap/config';
import { createSink } from '@heapcap/storage';
import { closeSink, connectQueue, exitAfter, RedisUnreachableError, shutdownSignal, syncTargetsFile } from './bootstrap.ts';
import { createWorkerLogger } from './logger.ts';
import { workerFromConfig } from './worker.ts';

async function main(): Promise<number> {
  const config = parseConfigAtEntry(process.env, (text) => process.stderr.write(text));
  if (config === undefined) return 2;
  const log = createWorkerLogger(config.logLevel);
  let queue;
  try {
    queue = await connectQueue({ redisUrl: config.redisUrl });
  } catch (err) {
    if (err instanceof RedisUnreachableError) {
      process.stderr.write(`${err.message}\n`);
      return 1;
    }
    throw err;
  }
  const sink = createSink(config.storage);
  const worker = workerFromConfig(config, queue, sink, log);
  try {
    await syncTargetsFile(queue, config.targetsFile, log);
    await worker.start();
    await shutdownSignal(log);
  } finally {
    exitAfter(worker.tuning.shutdownTimeoutMs + 10_000);
    await worker.close();
    await queue.close();
    closeSink(sink);
    log.flush();
  }
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`heapcap worker: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
