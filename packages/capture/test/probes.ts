/** Small probes shared by the headroom tests. */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { CdpSession } from '../src/index.ts';

/** The target's peak RSS so far (bytes), read over a separate short session. */
export async function maxRss(wsUrl: string): Promise<number> {
  const s = await CdpSession.connect(wsUrl, { connectTimeoutMs: 10_000, commandTimeoutMs: 10_000 });
  try {
    const r = await s.send('Runtime.evaluate', { expression: 'process.resourceUsage().maxRSS * 1024', returnByValue: true });
    return r.result.value as number;
  } finally {
    await s.close();
  }
}

/** Files (not directories: the sink may leave its empty date folders) under `dir`. */
export async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => !e.isDirectory()).map((e) => join(e.parentPath, e.name));
}
