/** GET /v1/captures/:id/artifact: the snapshot (decompressed, or gzip), or a redirect to a presigned URL. */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ArtifactQuerySchema, CaptureParamsSchema } from '../../schemas/captures.ts';
import { errorResponses } from '../../schemas/common.ts';

/** True when an Accept-Encoding header accepts gzip (`gzip` or `*` without q=0). */
export function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  return header.split(',').some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    return (coding === 'gzip' || coding === 'x-gzip' || coding === '*') && (q === undefined || Number(q) > 0);
  });
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

const artifactRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/:id/artifact',
    {
      config: { scope: 'artifacts:read' },
      schema: {
        operationId: 'getArtifact',
        tags: ['captures'],
        summary: 'Download the heap snapshot of a succeeded capture',
        description:
          'Streams the snapshot JSON. To a client that sends `Accept-Encoding: gzip` (curl --compressed, browsers) it is the stored gzip as it is, with ' +
          '`Content-Encoding: gzip` (a tenth of the bytes, nothing decompressed on the server); to others it is gunzipped on the fly (`Vary: Accept-Encoding`). ' +
          '`?encoding=gzip` streams the stored .gz bytes as a file (application/gzip). ' +
          '`Content-Disposition` names the file `<target>-<UTC time>-<id>.heapsnapshot` (`.gz` with ?encoding=gzip; `.heapprofile` for a sampling profile). ' +
          '`Range: bytes=…` (one range; `Accept-Ranges: bytes`) answers 206 with that part of the representation being sent: offsets into the stored gzip when it travels ' +
          'gzip-encoded or as a .gz file, into the JSON otherwise (so `curl -C -` resumes a plain download: the file on disk is the JSON). ' +
          'A range of the JSON of a gzipped artifact is gunzipped from the start and skipped to. `If-Range` with another `ETag` gets the whole file (200); ' +
          'a range past the end is 416 `range_not_satisfiable` with `Content-Range: bytes */LENGTH`. ' +
          '`?redirect=1` answers 302 to a presigned URL when storage is S3 (streams otherwise). Every download is audited.',
        params: CaptureParamsSchema,
        querystring: ArtifactQuerySchema,
        response: {
          200: {
            description: 'the snapshot: JSON by default (Content-Encoding: gzip to clients that accept it), the stored gzip bytes with ?encoding=gzip',
            content: {
              'application/json': { schema: z.unknown().describe('the heap snapshot JSON (gunzipped on the fly)') },
              'application/gzip': { schema: z.unknown().describe('the stored .heapsnapshot.gz bytes (?encoding=gzip)') },
            },
          },
          206: {
            description: 'the part of the representation the Range header asked for (Content-Range: bytes START-END/LENGTH)',
            content: {
              'application/json': { schema: z.unknown().describe('bytes of the snapshot JSON, or of its gzip when Content-Encoding: gzip') },
              'application/gzip': { schema: z.unknown().describe('bytes of the stored .heapsnapshot.gz (?encoding=gzip)') },
            },
          },
          302: z.null().describe('redirect to a presigned URL'),
          ...errorResponses(400, 401, 403, 404, 409, 416, 429, 503),
        },
      },
    },
    async (req, reply) => {
      const record = await app.captures.get(req.params.id);
      const redirect = req.query.redirect === '1' || req.query.redirect === 'true';
      const download = await app.artifacts.open(req, record, {
        gzip: req.query.encoding === 'gzip',
        acceptsGzip: acceptsGzip(req.headers['accept-encoding']),
        redirect,
        range: req.headers.range,
        ifRange: headerValue(req.headers['if-range']),
      });
      if (download.kind === 'redirect') return reply.redirect(download.url, 302);
      reply.header('content-type', download.contentType);
      if (download.contentEncoding !== undefined) reply.header('content-encoding', download.contentEncoding);
      // Which bytes a client gets depends on its Accept-Encoding: a cache in between must key on it.
      reply.header('vary', 'accept-encoding');
      reply.header('content-disposition', `attachment; filename="${download.filename}"`);
      reply.header('accept-ranges', 'bytes');
      reply.header('etag', download.etag);
      // The snapshot holds whatever the target held (tokens, personal data): never cache it.
      reply.header('cache-control', 'no-store');
      const { range, length } = download;
      if (range !== undefined) {
        reply.code(206);
        reply.header('content-range', `bytes ${range.start}-${range.end}/${length}`);
      }
      reply.header('content-length', String(range === undefined ? length : range.end - range.start + 1));
      // Streams bypass the serializer; Fastify destroys the stream if the client goes away.
      return reply.send(download.stream);
    },
  );
};

export default artifactRoutes;
