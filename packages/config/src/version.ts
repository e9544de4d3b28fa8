/** heapcap's version: recorded in every manifest, shown by `heapcap version` and in the OpenAPI document. */
export const HEAPCAP_VERSION = '0.1.0';
