/** A registered target → the capture engine's endpoint spec (the registry entry is the only source of addresses). */
import { definedOnly, type EndpointSpec } from '@heapcap/capture';
import type { Target } from '@heapcap/state';

/** How the capture engine reaches `target`. */
export function targetToEndpoint(target: Target): EndpointSpec {
  switch (target.kind) {
    case 'node':
      // The schema guarantees exactly one of the two.
      return target.ws !== undefined ? { kind: 'node', ws: target.ws } : { kind: 'node', inspect: target.inspect ?? '' };
    case 'node-pid':
      return { kind: 'node-pid', pid: target.pid, ...definedOnly({ port: target.port }) };
    case 'chromium': {
      const { urlPattern, titlePattern, type, pick } = target.select;
      return {
        kind: 'chromium',
        browser: target.browser,
        // Only the keys the target sets: the spec is compared and shown as the operator wrote it.
        select: definedOnly({ urlPattern, titlePattern, type, pick }),
      };
    }
  }
}
