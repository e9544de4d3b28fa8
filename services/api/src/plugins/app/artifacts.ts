/**
 * Artifact downloads and deletes. The snapshot streams from storage to the
 * client (never buffered here), gunzipped on the fly unless the caller asks
 * for the stored gzip bytes; S3 storage can instead redirect to a presigned
 * URL. Every download is audited before the first byte is sent.
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { pipeline, Transform, type Readable } from 'node:stream';
import type { CaptureRecord } from '@heapcap/state';
import { downloadFileName, type ArtifactStore } from '@heapcap/storage';
import { ApiError } from '../../errors.ts';
import { fromQueue } from './queue-errors.ts';

/** How the caller wants the bytes. */
export interface DownloadOptions {
  /** `?encoding=gzip`: the stored gzip bytes as a .gz file (application/gzip) instead of decompressed JSON. */
  gzip: boolean;
  /** The client sent `Accept-Encoding: gzip`: the JSON may travel as the stored gzip with `Content-Encoding: gzip`. */
  acceptsGzip: boolean;
  /** A presigned URL instead of the bytes, where storage can sign one. */
  redirect: boolean;
  /** The `Range` header, if any; `If-Range`, if any. */
  range: string | undefined;
  ifRange: string | undefined;
}

/** A stream to send, or a URL to redirect to. */
export type Download =
  | {
      kind: 'stream';
      stream: Readable;
      contentType: string;
      /** `gzip` when the JSON travels as the stored gzip bytes. */
      contentEncoding: 'gzip' | undefined;
      filename: string;
      /** Bytes of the whole representation (what Content-Range counts in). */
      length: number;
      /** The bytes sent when a range was asked for and satisfiable (206), else undefined (200, all of it). */
      range: { start: number; end: number } | undefined;
      /** Strong validator of the representation (If-Range compares with it). */
      etag: string;
    }
  | { kind: 'redirect'; url: string };

/**
 * The byte range a `Range` header asks of a representation of `length` bytes:
 * undefined to send all of it (no header, several ranges, a unit other than
 * bytes: all allowed by RFC 9110), or the inclusive range; throws
 * range_not_satisfiable when it starts past the end.
 */
export function requestedRange(header: string | undefined, length: number): { start: number; end: number } | undefined {
  if (header === undefined) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (m === null || (m[1] === '' && m[2] === '')) return undefined;
  let start: number;
  let end: number;
  if (m[1] === '') {
    // bytes=-N: the last N bytes.
    const n = Number(m[2]);
    if (n === 0) throw unsatisfiable(length);
    start = Math.max(0, length - n);
    end = length - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? length - 1 : Math.min(Number(m[2]), length - 1);
    if (m[2] !== '' && Number(m[2]) < start) return undefined;
  }
  if (start >= length) throw unsatisfiable(length);
  return { start, end };
}

function unsatisfiable(length: number): ApiError {
  return new ApiError('range_not_satisfiable', `the range starts past the end of the ${length} bytes`, { length }, { 'content-range': `bytes */${length}` });
}

/**
 * Passes on bytes `start`..`end` (inclusive) of a stream. What follows `end` is
 * read and dropped: ending early would tear down the pipeline as an error, and
 * a resumed download asks for everything to the end anyway.
 */
function slice(start: number, end: number): Transform {
  let offset = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      const from = Math.max(0, start - offset);
      const to = Math.min(chunk.length, end + 1 - offset);
      offset += chunk.length;
      done(null, to > from ? chunk.subarray(from, to) : undefined);
    },
  });
}

/** Artifact operations for the routes. */
export interface ArtifactsService {
  /** Opens (or presigns) the artifact of a succeeded capture; audited. */
  open(req: FastifyRequest, record: CaptureRecord, options: DownloadOptions): Promise<Download>;
  /** Deletes the snapshot and manifest of a finished capture. */
  remove(record: CaptureRecord): Promise<void>;
}

type Artifact = NonNullable<CaptureRecord['artifact']>;

function artifactOf(record: CaptureRecord): Artifact {
  if (record.status !== 'succeeded' || record.artifact === null) {
    throw new ApiError('artifact_not_available', `capture ${record.id} has no artifact (status ${record.status})`, { captureId: record.id, status: record.status });
  }
  return record.artifact;
}

declare module 'fastify' {
  interface FastifyInstance {
    artifacts: ArtifactsService;
  }
}

const artifactsPlugin: FastifyPluginAsync<{ sink: ArtifactStore }> = async (app, { sink }) => {
  const service: ArtifactsService = {
    async open(req, record, options) {
      const artifact = artifactOf(record);
      const encoding = options.redirect && sink.canPresign ? 'redirect' : artifact.gzip && (options.gzip || options.acceptsGzip) ? 'gzip' : 'identity';
      await fromQueue(() =>
        app.audit.record(req, { action: 'artifact.download', targetId: record.targetId, captureId: record.id, details: { encoding, key: artifact.key } }),
      );
      app.metrics.downloads.inc({ encoding });
      if (encoding === 'redirect') return { kind: 'redirect', url: await sink.presign(artifact.key) };
      // The stored bytes go out as they are: as a .gz file (?encoding=gzip), or as the JSON with
      // Content-Encoding: gzip to a client that accepts it (no decompressing here, a tenth of the bytes on the wire).
      const stored = encoding === 'gzip' || !artifact.gzip;
      const contentEncoding = encoding === 'gzip' && !options.gzip ? 'gzip' : undefined;
      const length = stored ? artifact.bytesStored : artifact.bytesUncompressed;
      // Strong and per representation: the JSON and its gzip are different bytes.
      const etag = `"${artifact.sha256.slice(0, 32)}${encoding === 'gzip' ? '-gzip' : ''}"`;
      // If-Range with another validator: the file changed under the client, so it gets all of it again.
      const range = options.ifRange === undefined || options.ifRange === etag ? requestedRange(options.range, length) : undefined;
      let stream: Readable;
      if (range === undefined) stream = await sink.open(artifact.key, { decompress: !stored });
      else if (stored) stream = await sink.open(artifact.key, { range });
      else {
        // A range of the JSON of a gzipped artifact: gunzip from the start and skip to it (gzip has no random access).
        const whole = await sink.open(artifact.key, { decompress: true });
        stream = pipeline(whole, slice(range.start, range.end), () => {});
      }
      const kind = artifact.kind === 'sampling-profile' ? 'sampling-profile' : 'snapshot';
      return {
        kind: 'stream',
        stream,
        contentType: options.gzip && artifact.gzip ? 'application/gzip' : 'application/json',
        contentEncoding,
        filename: downloadFileName({ id: record.id, targetId: record.targetId, createdAt: record.createdAt, kind }, options.gzip && artifact.gzip),
        length,
        range,
        etag,
      };
    },

    async remove(record) {
      if (record.artifact === null) return;
      await sink.remove({ key: record.artifact.key });
    },
  };
  app.decorate('artifacts', service);
};

export default fp(artifactsPlugin, { name: 'heapcap-artifacts', dependencies: ['heapcap-audit', 'heapcap-metrics'] });
