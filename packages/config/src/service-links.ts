/**
 * Kubernetes service links: unless a pod sets `enableServiceLinks: false`, the
 * kubelet gives it, for every Service of its namespace, variables named after
 * the Service (upper-cased, `-` → `_`). A Service `heapcap-api` yields
 * HEAPCAP_API_SERVICE_HOST, HEAPCAP_API_PORT=tcp://…, HEAPCAP_API_PORT_80_TCP_ADDR
 * and so on, which the settings check would refuse as misspelt HEAPCAP_* settings.
 * A variable counts as a link only when its name AND its value have the shape
 * the kubelet writes, so a misspelt real setting is still refused.
 */
import { isIP } from 'node:net';

const PORT_NUMBER = /^\d{1,5}$/;
const PROTOCOL = /^(tcp|udp|sctp)$/;

const isPort = (v: string): boolean => PORT_NUMBER.test(v) && Number(v) >= 1 && Number(v) <= 65535;

/** `tcp://10.0.0.1:80` or `tcp://[fd00::1]:80`, as the kubelet joins protocol, cluster IP and port. */
function isLinkUrl(v: string): boolean {
  const m = /^(tcp|udp|sctp):\/\/(?:\[([^\]]+)\]|([^:/[\]]+)):(\d+)$/.exec(v);
  if (m === null) return false;
  const host = m[2] ?? m[3] ?? '';
  return isIP(host) !== 0 && isPort(m[4]!);
}

/** The name and value shapes of the kubelet's service-link variables. */
const SHAPES: { name: RegExp; value: (v: string) => boolean }[] = [
  { name: /^[A-Z0-9_]+_SERVICE_HOST$/, value: (v) => isIP(v) !== 0 },
  // _SERVICE_PORT and _SERVICE_PORT_<PORT NAME> (named ports).
  { name: /^[A-Z0-9_]+_SERVICE_PORT(_[A-Z0-9_]+)?$/, value: isPort },
  { name: /^[A-Z0-9_]+_PORT$/, value: isLinkUrl },
  { name: /^[A-Z0-9_]+_PORT_\d+_(TCP|UDP|SCTP)$/, value: isLinkUrl },
  { name: /^[A-Z0-9_]+_PORT_\d+_(TCP|UDP|SCTP)_PROTO$/, value: (v) => PROTOCOL.test(v) },
  { name: /^[A-Z0-9_]+_PORT_\d+_(TCP|UDP|SCTP)_PORT$/, value: isPort },
  { name: /^[A-Z0-9_]+_PORT_\d+_(TCP|UDP|SCTP)_ADDR$/, value: (v) => isIP(v) !== 0 },
];

/** Whether `name=value` is a variable the kubelet writes for a Service (name and value both have its shape). */
export function isServiceLink(name: string, value: string): boolean {
  return SHAPES.some((s) => s.name.test(name) && s.value(value));
}
