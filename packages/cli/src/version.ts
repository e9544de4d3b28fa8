/** heapcap's version, recorded in every manifest. */
export const HEAPCAP_VERSION = '0.1.0';
