/** An AbortSignal that fires when the client goes away (for `?wait=`). */
import type { FastifyReply } from 'fastify';

/** Aborts when the response closes before it was written: the client left, stop waiting for it. */
export function abortOnClientGone(reply: FastifyReply): AbortSignal {
  const ac = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) ac.abort();
  });
  return ac.signal;
}
