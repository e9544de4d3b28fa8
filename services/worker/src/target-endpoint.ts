/** A registered target → the capture engine's endpoint spec (the registry entry is the only source of addresses). */
import type { EndpointSpec } from '@heapcap/capture';
import type { Target } from '@heapcap/queue';

/** How the capture engine reaches `target`. */
export function targetToEndpoint(target: Target): EndpointSpec {
  switch (target.kind) {
    case 'node':
      // The schema guarantees exactly one of the two.
      return target.ws !== undefined ? { kind: 'node', ws: target.ws } : { kind: 'node', inspect: target.inspect ?? '' };
    case 'node-pid':
      return { kind: 'node-pid', pid: target.pid, ...(target.port === undefined ? {} : { port: target.port }) };
    case 'chromium': {
      const { urlPattern, titlePattern, type, pick } = target.select;
      return {
        kind: 'chromium',
        browser: target.browser,
        select: {
          ...(urlPattern === undefined ? {} : { urlPattern }),
          ...(titlePattern === undefined ? {} : { titlePattern }),
          ...(type === undefined ? {} : { type }),
          ...(pick === undefined ? {} : { pick }),
        },
      };
    }
  }
}
