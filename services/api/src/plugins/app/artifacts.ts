/**
 * Artifact downloads and deletes. The snapshot streams from storage to the
 * client (never buffered here), gunzipped on the fly unless the caller asks
 * for the stored gzip bytes; S3 storage can instead redirect to a presigned
 * URL. Every download is audited before the first byte is sent.
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import type { CaptureRecord } from '@heapcap/state';
import type { ArtifactStore } from '@heapcap/storage';
import { ApiError } from '../../errors.ts';
import { fromQueue } from './queue-errors.ts';

/** How the caller wants the bytes. */
export interface DownloadOptions {
  /** The stored gzip bytes instead of decompressed JSON. */
  gzip: boolean;
  /** A presigned URL instead of the bytes, where storage can sign one. */
  redirect: boolean;
}

/** A stream to send, or a URL to redirect to. */
export type Download =
  | { kind: 'stream'; stream: Readable; contentType: string; filename: string; length: number | undefined }
  | { kind: 'redirect'; url: string };

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
      const encoding = options.redirect && sink.canPresign ? 'redirect' : options.gzip && artifact.gzip ? 'gzip' : 'identity';
      await fromQueue(() =>
        app.audit.record(req, { action: 'artifact.download', targetId: record.targetId, captureId: record.id, details: { encoding, key: artifact.key } }),
      );
      app.metrics.downloads.inc({ encoding });
      if (encoding === 'redirect') return { kind: 'redirect', url: await sink.presign(artifact.key) };
      const decompress = encoding === 'identity';
      const stream = await sink.open(artifact.key, { decompress });
      const gz = encoding === 'gzip';
      return {
        kind: 'stream',
        stream,
        contentType: gz ? 'application/gzip' : 'application/json',
        // `.heapprofile` is what Chrome DevTools' Memory tab loads a sampling profile from.
        filename: `${record.id}.${artifact.kind === 'sampling-profile' ? 'heapprofile' : 'heapsnapshot'}${gz ? '.gz' : ''}`,
        length: gz || !artifact.gzip ? artifact.bytesStored : artifact.bytesUncompressed,
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
