/**
 * Inspector addresses of registered targets: `HOST:PORT` and `ws://` URLs.
 *
 * Written as regular expressions rather than refinements so that the OpenAPI
 * document (generated from these schemas) states the same rule the server
 * enforces, and so that a target that cannot be reached (port 0 or 99999, a
 * host no URL parser accepts) is refused when it is registered instead of
 * failing at connect time. Everything these patterns accept also parses with
 * the WHATWG URL parser (`new URL`), which is what the capture engine uses;
 * the ws schema checks that too.
 */
import { z } from 'zod';

/** 1–65535, no leading zeros. */
const PORT = '(?:6553[0-5]|655[0-2]\\d|65[0-4]\\d{2}|6[0-4]\\d{3}|[1-5]\\d{4}|[1-9]\\d{0,3})';
const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4 = `${OCTET}(?:\\.${OCTET}){3}`;
const H16 = '[0-9A-Fa-f]{1,4}';
const LS32 = `(?:${H16}:${H16}|${IPV4})`;
/** RFC 3986 IPv6address (no zone id). */
const IPV6 = [
  `(?:${H16}:){6}${LS32}`,
  `::(?:${H16}:){5}${LS32}`,
  `(?:${H16})?::(?:${H16}:){4}${LS32}`,
  `(?:(?:${H16}:){0,1}${H16})?::(?:${H16}:){3}${LS32}`,
  `(?:(?:${H16}:){0,2}${H16})?::(?:${H16}:){2}${LS32}`,
  `(?:(?:${H16}:){0,3}${H16})?::${H16}:${LS32}`,
  `(?:(?:${H16}:){0,4}${H16})?::${LS32}`,
  `(?:(?:${H16}:){0,5}${H16})?::${H16}`,
  `(?:(?:${H16}:){0,6}${H16})?::`,
].join('|');
// A host name: labels of letters, digits, "_" and "-" (not at either end). The
// last label starts with a letter or "_": a URL parser reads a name whose last
// label is a number as an IPv4 address ("1.2.3" → 1.2.0.3). No "xn--" labels:
// an invalid punycode label makes the URL parser fail.
const LABEL_TAIL = '(?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?';
const LABEL = `(?![Xx][Nn]--)[A-Za-z0-9_]${LABEL_TAIL}`;
const LAST_LABEL = `(?![Xx][Nn]--)[A-Za-z_]${LABEL_TAIL}`;
const HOST = `(?:${IPV4}|(?:${LABEL}\\.)*${LAST_LABEL}|\\[(?:${IPV6})\\])`;
// RFC 3986 userinfo, path and query characters (ASCII only; no "\", which a
// URL parser reads as "/" in ws:// URLs and so would move the host).
const USERINFO = "[A-Za-z0-9._~!$&'()*+,;=:%-]*";
const PATH = "/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*";
const QUERY = "\\?[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*";

/** `HOST:PORT` of an inspector or a browser's remote debugging port. */
export const HostPortSchema = z
  .string()
  .regex(new RegExp(`^${HOST}:${PORT}$`), 'HOST:PORT with a port from 1 to 65535, e.g. 127.0.0.1:9229 (host: a name, an IPv4 address or [IPv6])');

const WS_URL = new RegExp(`^wss?://(?:${USERINFO}@)?${HOST}(?::${PORT})?(?:${PATH})?(?:${QUERY})?$`);

/** A full inspector WebSocket URL: ws:// or wss://, a port from 1 to 65535 if one is given. */
export const WsUrlSchema = z
  .string()
  .regex(WS_URL, { message: 'a ws:// or wss:// URL with a port from 1 to 65535, e.g. ws://127.0.0.1:9229/<uuid>', abort: true })
  .refine((v) => URL.canParse(v), 'not a URL');
