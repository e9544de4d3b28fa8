/**
 * A memory-limited cgroup for tests (root only): create a child group with a
 * limit, move a target's pid in, read what the kernel counted, remove it.
 *
 * cgroup v1 (memory controller, e.g. /sys/fs/cgroup/memory): the group is made
 * under the test process's own memory cgroup, so every limit above it still
 * applies. cgroup v2: under the v2 root (the only place a group with processes
 * can enable the memory controller for children), with "+memory" in the root's
 * subtree_control.
 *
 * Moving a pid does not move the memory it already has: on v1 charge moving
 * (memory.move_charge_at_immigrate) is deprecated and refused by recent
 * kernels (6.18 here: EINVAL), and v2 never moves charges. The group's usage
 * starts near zero and the limit bounds what the process allocates after the
 * move, which is exactly the snapshot's extra memory.
 */
import { existsSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { onProcessExit } from './reaper.ts';

/** What the kernel counted for the group (bytes). */
export interface CgroupStats {
  usageBytes: number;
  /** Highest usage since the group was made (v1 max_usage_in_bytes, v2 memory.peak; null if absent). */
  maxUsageBytes: number | null;
  /** Times the limit was hit (v1 failcnt, v2 memory.events "max"). */
  limitHits: number;
  /** Processes the kernel OOM-killed in this group. */
  oomKills: number;
}

/** A memory cgroup made for a test. */
export interface MemoryCgroup {
  version: 1 | 2;
  /** Absolute directory of the group. */
  dir: string;
  setLimit(bytes: number): Promise<void>;
  /** Moves `pid` into the group (remembering where it was, for `remove`). */
  moveIn(pid: number): Promise<void>;
  pids(): Promise<number[]>;
  stats(): Promise<CgroupStats>;
  /** Moves remaining pids back where they came from and removes the group. Idempotent. */
  remove(): Promise<void>;
}

interface Layout {
  version: 1 | 2;
  /** Directory of the cgroup the new group is made in. */
  parent: string;
}

function mountFor(type: 'cgroup' | 'cgroup2', option?: string): { root: string; point: string } | undefined {
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [pre, post] = line.split(' - ');
    if (pre === undefined || post === undefined) continue;
    const f = pre.split(' ');
    const [fstype, , superOpts] = post.split(' ');
    if (fstype !== type) continue;
    if (option !== undefined && !(superOpts ?? '').split(',').includes(option)) continue;
    return { root: f[3] ?? '/', point: f[4] ?? '' };
  }
  return undefined;
}

/** Where memory cgroups can be made here, or why not. */
export function memoryCgroupLayout(): Layout | { unsupported: string } {
  if (process.platform !== 'linux') return { unsupported: 'not Linux' };
  if (process.getuid?.() !== 0) return { unsupported: 'not root' };
  const v1 = mountFor('cgroup', 'memory');
  if (v1 !== undefined) {
    const own = /^\d+:[^:]*\bmemory\b[^:]*:(.*)$/m.exec(readFileSync('/proc/self/cgroup', 'utf8'))?.[1] ?? '/';
    const rel = v1.root !== '/' && own.startsWith(v1.root) ? own.slice(v1.root.length) : own;
    return { version: 1, parent: join(v1.point, rel) };
  }
  const v2 = mountFor('cgroup2');
  if (v2 !== undefined && existsSync(join(v2.point, 'cgroup.controllers'))) {
    if (!readFileSync(join(v2.point, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('memory')) return { unsupported: 'cgroup v2 without the memory controller' };
    return { version: 2, parent: v2.point };
  }
  return { unsupported: 'no memory cgroup mounted' };
}

function statValue(text: string, key: string): number {
  return Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
}

async function readNumber(path: string): Promise<number | null> {
  try {
    const t = (await readFile(path, 'utf8')).trim();
    return /^\d+$/.test(t) ? Number(t) : null;
  } catch {
    return null;
  }
}

/** Creates a child memory cgroup with `limitBytes`; throws when this machine cannot (see memoryCgroupLayout). */
export async function createMemoryCgroup(limitBytes: number, name = 'heapcap-test'): Promise<MemoryCgroup> {
  const layout = memoryCgroupLayout();
  if ('unsupported' in layout) throw new Error(`cannot make a memory cgroup: ${layout.unsupported}`);
  const { version, parent } = layout;
  if (version === 2) {
    const control = join(parent, 'cgroup.subtree_control');
    if (!readFileSync(control, 'utf8').split(/\s+/).includes('memory')) await writeFile(control, '+memory');
  }
  const dir = join(parent, `${name}-${process.pid}-${randomBytes(3).toString('hex')}`);
  await mkdir(dir);
  const limitFile = join(dir, version === 1 ? 'memory.limit_in_bytes' : 'memory.max');
  const procsFile = join(dir, 'cgroup.procs');
  const origins = new Map<number, string>();

  const pidsSync = (): number[] => {
    try {
      return readFileSync(procsFile, 'utf8').split('\n').filter(Boolean).map(Number);
    } catch {
      return [];
    }
  };
  // Synchronous, for the exit hook too: back to where each pid came from, then rmdir.
  const evacuateAndRemove = (): boolean => {
    for (const pid of pidsSync()) {
      try {
        writeFileSync(join(origins.get(pid) ?? parent, 'cgroup.procs'), String(pid));
      } catch {
        // The process exited meanwhile.
      }
    }
    try {
      rmdirSync(dir);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ENOENT';
    }
  };
  const unregister = onProcessExit(() => void evacuateAndRemove());

  let removing: Promise<void> | undefined;
  const group: MemoryCgroup = {
    version,
    dir,
    setLimit: (bytes) => writeFile(limitFile, String(bytes)),
    moveIn: async (pid) => {
      // Remember where the pid was, so remove() can put it back (paths are relative to the hierarchy's mount root).
      const own = await readFile(`/proc/${pid}/cgroup`, 'utf8');
      const path = (version === 1 ? /^\d+:[^:]*\bmemory\b[^:]*:(.*)$/m : /^0::(.*)$/m).exec(own)?.[1];
      const mount = version === 1 ? mountFor('cgroup', 'memory') : mountFor('cgroup2');
      if (path !== undefined && mount !== undefined) {
        origins.set(pid, join(mount.point, mount.root !== '/' && path.startsWith(mount.root) ? path.slice(mount.root.length) : path));
      }
      await writeFile(procsFile, String(pid));
    },
    pids: async () => pidsSync(),
    stats: async () => {
      if (version === 1) {
        const oom = await readFile(join(dir, 'memory.oom_control'), 'utf8');
        return {
          usageBytes: (await readNumber(join(dir, 'memory.usage_in_bytes'))) ?? 0,
          maxUsageBytes: await readNumber(join(dir, 'memory.max_usage_in_bytes')),
          limitHits: (await readNumber(join(dir, 'memory.failcnt'))) ?? 0,
          oomKills: statValue(oom, 'oom_kill'),
        };
      }
      const events = await readFile(join(dir, 'memory.events'), 'utf8');
      return {
        usageBytes: (await readNumber(join(dir, 'memory.current'))) ?? 0,
        maxUsageBytes: await readNumber(join(dir, 'memory.peak')),
        limitHits: statValue(events, 'max'),
        oomKills: statValue(events, 'oom_kill'),
      };
    },
    remove: () =>
      (removing ??= (async () => {
        // A killed process stays attached until the kernel has reaped it: retry for a while.
        const deadline = Date.now() + 10_000;
        while (!evacuateAndRemove()) {
          if (Date.now() > deadline) throw new Error(`could not remove cgroup ${dir}: still holds pids ${pidsSync().join(', ') || '(none)'}`);
          await sleep(100);
        }
        unregister();
        await rmdir(dir).catch(() => undefined);
      })()),
  };
  try {
    await group.setLimit(limitBytes);
  } catch (err) {
    await group.remove();
    throw err;
  }
  return group;
}
