/** Shared helpers for the S3 sink tests (real MinIO, real snapshots). */
import {
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { execFile } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import type { ArtifactRef } from '../src/types.ts';

const run = promisify(execFile);

/** A fresh ref for one test capture. */
export function testRef(gzip: boolean, targetId = 'test-target'): ArtifactRef {
  return { captureId: randomUUID(), targetId, startedAt: new Date(), gzip };
}

/**
 * Writes a real V8 heap snapshot of a child Node process holding `objects`
 * small objects (measured on Node 20: 100k ≈ 52 MB, 300k ≈ 155 MB of snapshot JSON). Deadline: 60 s.
 */
export async function writeSnapshot(dir: string, objects: number): Promise<string> {
  const path = join(dir, 'fixture.heapsnapshot');
  const script = `
    globalThis.keep = Array.from({ length: ${objects} }, (_, i) => ({
      id: i, name: 'item-' + i + '-' + ((i * 2654435761) % 1e9).toString(36), tags: ['a' + (i % 97), 'b' + (i % 89)],
    }));
    require('node:v8').writeHeapSnapshot(process.argv[1]);`;
  await run(process.execPath, ['-e', script, path], { timeout: 60_000 });
  return path;
}

/** Hex sha256 of a buffer. */
export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Reads a stream to the end (tests only: fixtures are tens of MB). */
export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A source that is what its name says, plus the sha256 of everything it will emit. */
export interface SlowSource {
  stream: Readable;
  bytes: number;
  sha256: string;
}

/**
 * Emits `chunks` chunks of `chunkBytes` random (incompressible) bytes, one every
 * `intervalMs`: an upload fed by it is still running while a test injects a fault.
 */
export function slowSource(chunks: number, chunkBytes: number, intervalMs: number): SlowSource {
  const data = Array.from({ length: chunks }, () => randomBytes(chunkBytes));
  const hash = createHash('sha256');
  for (const d of data) hash.update(d);
  async function* emit(): AsyncGenerator<Buffer> {
    for (const d of data) {
      await sleep(intervalMs);
      yield d;
    }
  }
  return { stream: Readable.from(emit(), { objectMode: false }), bytes: chunks * chunkBytes, sha256: hash.digest('hex') };
}

/**
 * Keys of open multipart uploads: bucket-wide, plus by exact `key` when given.
 * MinIO (2026-02 build) answers a bucket-wide listing from memory (uploads this
 * server process saw), finds uploads that survived a restart only when asked
 * for their exact key, and ignores partial prefixes; so both are asked.
 */
export async function openUploads(client: S3Client, bucket: string, key?: string): Promise<string[]> {
  const list = async (Prefix?: string): Promise<string[]> => {
    const out = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix }));
    return (out.Uploads ?? []).map((u) => u.Key ?? '');
  };
  const keys = new Set([...(await list()), ...(key === undefined ? [] : await list(key))]);
  return [...keys];
}

/** HeadObject, or undefined when the key does not exist. */
export async function head(client: S3Client, bucket: string, key: string) {
  try {
    return await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
  } catch (err) {
    if ((err as { name?: string }).name === 'NotFound') return undefined;
    throw err;
  }
}
