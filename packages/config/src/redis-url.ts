/**
 * HEAPCAP_REDIS_URL: one Redis (`redis://`, `rediss://`) or a Redis Cluster
 * (`redis+cluster://HOST:PORT,HOST:PORT…`, `rediss+cluster://…` for TLS).
 * A cluster URL names one or more seed nodes; the client learns the others
 * (and which node serves which slot) from them.
 */

/** Where Redis is: one server, or the seed nodes of a cluster. */
export type RedisTarget =
  | { kind: 'single'; url: string }
  | { kind: 'cluster'; nodes: { host: string; port: number }[]; username?: string; password?: string; tls: boolean };

const CLUSTER_SCHEME = /^(rediss?)\+cluster:\/\//;

/** True for `redis+cluster://` and `rediss+cluster://` URLs. */
export function isClusterRedisUrl(url: string): boolean {
  return CLUSTER_SCHEME.test(url);
}

/** Parses HEAPCAP_REDIS_URL; throws an Error whose message says what is wrong and what is expected. */
export function parseRedisUrl(url: string): RedisTarget {
  const scheme = CLUSTER_SCHEME.exec(url);
  if (scheme === null) {
    if (!/^rediss?:\/\//.test(url)) throw new Error('must start with redis://, rediss://, redis+cluster:// or rediss+cluster://');
    return { kind: 'single', url };
  }
  const rest = url.slice(scheme[0].length);
  const at = rest.lastIndexOf('@');
  const auth = at === -1 ? '' : rest.slice(0, at);
  // Everything after the host list (a path or query) has no meaning for a cluster: refuse it rather than ignore it.
  const hostList = at === -1 ? rest : rest.slice(at + 1);
  if (/[/?#]/.test(hostList.replace(/\/$/, ''))) throw new Error('a cluster URL is redis+cluster://[USER:PASSWORD@]HOST:PORT,HOST:PORT… (no database number, path or query: a cluster has only database 0)');
  const nodes = hostList
    .replace(/\/$/, '')
    .split(',')
    .map((part) => {
      const m = /^([^:,\s]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(part.trim());
      const port = m === null ? NaN : Number(m[2]);
      if (m === null || m[1] === undefined || !(port >= 1 && port <= 65535)) throw new Error(`cluster node "${part}" is not HOST:PORT (e.g. redis+cluster://10.0.0.1:6379,10.0.0.2:6379)`);
      return { host: m[1].replace(/^\[|\]$/g, ''), port };
    });
  const target: RedisTarget = { kind: 'cluster', nodes, tls: scheme[1] === 'rediss' };
  if (auth !== '') {
    const colon = auth.indexOf(':');
    const user = decodeURIComponent(colon === -1 ? '' : auth.slice(0, colon));
    const password = decodeURIComponent(colon === -1 ? auth : auth.slice(colon + 1));
    if (user !== '') target.username = user;
    if (password !== '') target.password = password;
  }
  return target;
}
