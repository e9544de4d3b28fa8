/** The environment the kubelet gives a pod for each Service of its namespace (unless enableServiceLinks: false). */

/** The service-link variables of a Service `name` with cluster IP `ip` (v4 or v6) and one named TCP port. */
export function serviceLinkEnv(name: string, ip: string, port: number, portName = 'http'): Record<string, string> {
  const p = name.toUpperCase().replace(/-/g, '_');
  const url = `tcp://${ip.includes(':') ? `[${ip}]` : ip}:${port}`;
  return {
    [`${p}_SERVICE_HOST`]: ip,
    [`${p}_SERVICE_PORT`]: String(port),
    [`${p}_SERVICE_PORT_${portName.toUpperCase()}`]: String(port),
    [`${p}_PORT`]: url,
    [`${p}_PORT_${port}_TCP`]: url,
    [`${p}_PORT_${port}_TCP_PROTO`]: 'tcp',
    [`${p}_PORT_${port}_TCP_PORT`]: String(port),
    [`${p}_PORT_${port}_TCP_ADDR`]: ip,
  };
}
