/**
 * Sizes as heapcap prints them: binary mebibytes, labelled `MiB`. Every size
 * heapcap takes (`--memory-limit`, `--memory-ceiling`, `HEAPCAP_*_MB`) is in
 * MiB, so what is printed reads back as what was given (1500 → `1500.0 MiB`,
 * not `1572.9 MB`).
 */

/** Bytes in one MiB. */
export const MIB = 1024 * 1024;

/** `1500.0 MiB` (one decimal). */
export function formatMiB(bytes: number): string {
  return `${(bytes / MIB).toFixed(1)} MiB`;
}
