/**
 * A real MinIO server for tests: fresh data dir, free loopback ports, root
 * credentials, and the fault injections the S3 sink is tested against
 * (kill, SIGSTOP/SIGCONT, restart on the same data dir).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
// The AWS SDK loads when MinIO starts, not in every test file that imports the test kit.
import type { S3Client } from '@aws-sdk/client-s3';
import { OutputLog } from './output-log.ts';
import { freePort, tmpDir, waitFor, type TmpDir } from './proc.ts';
import { onProcessExit } from './reaper.ts';

/** Options for {@link startMinio}. */
export interface MinioOptions {
  /**
   * Give MinIO a built-in KMS key (`MINIO_KMS_SECRET_KEY`, key id `heapcap-test-key`).
   * Without one MinIO refuses SSE-S3 and SSE-KMS requests.
   */
  kms?: boolean;
  /** Deadline for the server to answer its health check (default 30 s). */
  startTimeoutMs?: number;
}

/** A running MinIO server owned by a test. */
export interface MinioServer {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  readonly port: number;
  readonly accessKey: string;
  readonly secretKey: string;
  readonly region: string;
  readonly dataDir: string;
  /** Key id usable as SSE-KMS key when started with `kms: true`. */
  readonly kmsKeyId: string;
  /** An S3 client with the root credentials (path-style, no retries worth mentioning). */
  readonly client: S3Client;
  /** Pid of the current server process (changes on restart). */
  pid(): number | undefined;
  /** The server's output so far (for failure messages). */
  logs(): string;
  createBucket(name: string): Promise<void>;
  /** Stops the server (SIGTERM, SIGKILL after 5 s) and removes the data dir. Idempotent. */
  stop(): Promise<void>;
  /** Sends `signal` (default SIGKILL) and waits until the process has exited; keeps the data dir. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGSTOP: the process keeps its sockets (the kernel still accepts connections) but answers nothing. */
  pause(): void;
  /** SIGCONT after {@link pause}. */
  resume(): void;
  /** Starts a new server process on the same data dir and ports (after {@link kill}). */
  restart(): Promise<void>;
}

const ROOT_USER = 'heapcap-test';
const ROOT_PASSWORD = 'heapcap-test-secret';
const KMS_KEY_ID = 'heapcap-test-key';
// 32 fixed bytes, base64: a test-only key for MinIO's single-key KMS.
const KMS_KEY = Buffer.alloc(32, 7).toString('base64');

/** Path of the MinIO binary: `$HEAPCAP_MINIO_BIN` or `~/go/bin/minio` (installed by scripts/test-deps.sh). */
export function minioBinary(): string {
  const path = process.env.HEAPCAP_MINIO_BIN ?? join(homedir(), 'go', 'bin', 'minio');
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new Error(`MinIO binary not found at ${path}: run \`bash scripts/test-deps.sh\` to install it (or set HEAPCAP_MINIO_BIN)`);
  }
  return path;
}

/** Starts MinIO on free loopback ports with a fresh data dir; resolves once `/minio/health/live` answers. */
export async function startMinio(options: MinioOptions = {}): Promise<MinioServer> {
  const binary = minioBinary();
  const startTimeoutMs = options.startTimeoutMs ?? 30_000;
  const dir: TmpDir = await tmpDir('heapcap-minio');
  const port = await freePort();
  const consolePort = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  // The current process's stdout + stderr (fatal start-up errors go to stderr).
  let logText: () => string = () => '';
  let exited: Promise<void> = Promise.resolve();
  let unregister: () => void = () => {};
  let stopped: Promise<void> | undefined;

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    MINIO_ROOT_USER: ROOT_USER,
    MINIO_ROOT_PASSWORD: ROOT_PASSWORD,
    // No update checks or callbacks: the machine has no network beyond registries.
    MINIO_UPDATE: 'off',
    MINIO_BROWSER: 'off',
    ...(options.kms ? { MINIO_KMS_SECRET_KEY: `${KMS_KEY_ID}:${KMS_KEY}` } : {}),
  };

  const launch = async (): Promise<void> => {
    const proc = spawn(
      binary,
      ['server', dir.path, '--address', `127.0.0.1:${port}`, '--console-address', `127.0.0.1:${consolePort}`, '--quiet'],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = proc;
    const out = new OutputLog(proc.stdout);
    const err = new OutputLog(proc.stderr);
    logText = () => `${out.text()}${err.text()}`;
    let hasExited = false;
    exited = new Promise((resolve) => {
      proc.once('exit', () => {
        hasExited = true;
        resolve();
      });
    });
    unregister();
    unregister = onProcessExit(() => proc.kill('SIGKILL'));
    try {
      await waitFor(
        async () => {
          if (hasExited) throw new Error(`minio exited during start-up: ${logText().slice(-2000)}`);
          const res = await fetch(`${endpoint}/minio/health/live`, { signal: AbortSignal.timeout(1000) });
          return res.ok;
        },
        { timeoutMs: startTimeoutMs, intervalMs: 100, what: `MinIO health at ${endpoint}` },
      );
    } catch (err) {
      proc.kill('SIGKILL');
      await exited;
      throw err;
    }
  };

  const kill = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    const proc = child;
    if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill(signal);
    // A stopped process does not act on SIGTERM until it is continued.
    if (signal !== 'SIGKILL') proc.kill('SIGCONT');
    await exited;
  };

  const { CreateBucketCommand, S3Client } = await import('@aws-sdk/client-s3');
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: ROOT_USER, secretAccessKey: ROOT_PASSWORD },
    maxAttempts: 2,
    requestHandler: { connectionTimeout: 2000, requestTimeout: 10_000, throwOnRequestTimeout: true },
  });

  try {
    await launch();
  } catch (err) {
    client.destroy();
    await dir.cleanup();
    throw err;
  }

  return {
    endpoint,
    port,
    accessKey: ROOT_USER,
    secretKey: ROOT_PASSWORD,
    region: 'us-east-1',
    dataDir: dir.path,
    kmsKeyId: KMS_KEY_ID,
    client,
    pid: () => child?.pid,
    logs: () => logText(),
    async createBucket(name: string): Promise<void> {
      await client.send(new CreateBucketCommand({ Bucket: name }));
    },
    stop(): Promise<void> {
      stopped ??= (async () => {
        client.destroy();
        const proc = child;
        if (proc !== undefined && proc.exitCode === null && proc.signalCode === null) {
          const graceful = kill('SIGTERM');
          const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
          await graceful;
          clearTimeout(timer);
        }
        unregister();
        await dir.cleanup();
      })();
      return stopped;
    },
    kill,
    pause(): void {
      child?.kill('SIGSTOP');
    },
    resume(): void {
      child?.kill('SIGCONT');
    },
    async restart(): Promise<void> {
      if (stopped !== undefined) throw new Error('minio was stopped; start a new one');
      await kill('SIGKILL');
      await launch();
    },
  };
}

/** The environment that points a heapcap process's store at `minio`: `storage` is the `s3://bucket/prefix` URL. */
export function heapcapS3Env(minio: MinioServer, storage: string): Record<string, string> {
  return {
    HEAPCAP_STORAGE: storage,
    HEAPCAP_S3_ENDPOINT: minio.endpoint,
    HEAPCAP_S3_FORCE_PATH_STYLE: 'true',
    AWS_ACCESS_KEY_ID: minio.accessKey,
    AWS_SECRET_ACCESS_KEY: minio.secretKey,
    AWS_REGION: minio.region,
  };
}
