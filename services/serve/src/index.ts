/** @heapcap/serve — `heapcap serve`: the API and a worker in one process (composition root). */
export { runServe, parseServeArgs, SERVE_USAGE, type ServeFlags } from './serve.ts';
