/**
 * The expressions evaluated inside the target to learn how much memory it has
 * to spare. Plain JavaScript source (they run in the target, not here), kept
 * to syntax Node 16+ understands, and written as one expression so they define
 * no globals; they register no listeners and never throw (failures become
 * `warnings`).
 *
 * Reading files needs `fs`, and `require` is not in scope of an evaluated
 * expression (not even for CommonJS targets, where it is module-local).
 * `process.getBuiltinModule` exists since Node 20.16 / 22.3; older targets get
 * `require` from the inspector's command-line API, which only exists for the
 * one evaluation that asks for it (`includeCommandLineAPI: true`). Both were
 * checked on ESM entry points (Node 18.20, 20.20, 22.23).
 */

/** JSON returned by NODE_MEMORY_PROBE (numbers in bytes; null when unknown). */
export interface NodeProbeResult {
  access: 'getBuiltinModule' | 'commandLineAPI' | 'none';
  rssBytes: number | null;
  maxRssBytes: number | null;
  heapLimitBytes: number | null;
  constrainedMemoryBytes: number | null;
  availableMemoryBytes: number | null;
  host: { totalBytes: number; availableBytes: number } | null;
  cgroup: {
    version: 1 | 2;
    path: string;
    dir: string;
    limitBytes: number | null;
    limitDir: string | null;
    usageBytes: number;
    inactiveFileBytes: number;
  } | null;
  warnings: string[];
}

/**
 * Node.js: RSS, peak RSS, V8 heap limit, libuv's view of constraints, host memory
 * and the cgroup (v1 memory controller or v2) the process is in, walking up to
 * the tightest limit. `procDir` is `/proc/self` except in tests of other layouts.
 */
export function nodeMemoryProbe(procDir = '/proc/self'): string {
  return `((procDir) => {
  const out = { access: 'none', rssBytes: null, maxRssBytes: null, heapLimitBytes: null, constrainedMemoryBytes: null,
    availableMemoryBytes: null, host: null, cgroup: null, warnings: [] };
  const attempt = (what, fn) => { try { return fn(); } catch (e) { out.warnings.push(what + ': ' + (e && e.message || String(e))); return null; } };
  // Unlimited is reported as a huge number (cgroup v1: 2^63 rounded to a page; libuv: 2^64).
  const finite = (n) => (typeof n === 'number' && n > 0 && n < 2 ** 60 ? n : null);
  let load = null;
  if (typeof process.getBuiltinModule === 'function') { load = (n) => process.getBuiltinModule(n); out.access = 'getBuiltinModule'; }
  else if (typeof require === 'function') { load = require; out.access = 'commandLineAPI'; }
  out.rssBytes = attempt('rss', () => (process.memoryUsage.rss ? process.memoryUsage.rss() : process.memoryUsage().rss));
  out.maxRssBytes = attempt('maxRSS', () => (process.resourceUsage ? process.resourceUsage().maxRSS * 1024 : null));
  out.constrainedMemoryBytes = attempt('constrainedMemory', () => (typeof process.constrainedMemory === 'function' ? finite(process.constrainedMemory()) : null));
  out.availableMemoryBytes = attempt('availableMemory', () => (typeof process.availableMemory === 'function' ? finite(process.availableMemory()) : null));
  if (load === null) { out.warnings.push('no way to load builtin modules in the target: heap limit, host and cgroup unknown'); return out; }
  out.heapLimitBytes = attempt('v8', () => load('v8').getHeapStatistics().heap_size_limit);
  // os.freemem() is MemAvailable on Linux (reclaimable cache counts as free).
  out.host = attempt('os', () => { const os = load('os'); return { totalBytes: os.totalmem(), availableBytes: os.freemem() }; });
  out.cgroup = attempt('cgroup', () => {
    const fs = load('fs');
    const read = (p) => { try { return fs.readFileSync(p, 'utf8'); } catch (e) { return null; } };
    // No regular expressions in here: every match updates the target's legacy RegExp
    // statics (RegExp.lastMatch, $1…), which would leave our strings in its heap.
    const digits = (s) => s !== '' && s.split('').every((c) => c >= '0' && c <= '9');
    const num = (p) => { const t = read(p); if (t === null) return null; const s = t.trim(); return s === 'max' ? Infinity : (digits(s) ? Number(s) : null); };
    const stat = (p, key) => { const t = read(p); if (t === null) return 0; const line = t.split('\\n').find((l) => l.indexOf(key + ' ') === 0); const v = line === undefined ? '' : line.slice(key.length + 1).trim(); return digits(v) ? Number(v) : 0; };
    const self = read(procDir + '/cgroup');
    const mountinfo = read(procDir + '/mountinfo');
    if (self === null || mountinfo === null) return null;
    let v1 = null; let v2 = null;
    for (const line of self.split('\\n')) {
      const i = line.indexOf(':'); const j = i < 0 ? -1 : line.indexOf(':', i + 1);
      if (j < 0 || !digits(line.slice(0, i))) continue;
      const id = line.slice(0, i); const controllers = line.slice(i + 1, j); const cgPath = line.slice(j + 1);
      if (controllers.split(',').indexOf('memory') >= 0) v1 = cgPath;
      else if (id === '0' && controllers === '') v2 = cgPath;
    }
    // mountinfo escapes space, tab, newline and backslash as \\ooo (octal).
    const unescape = (s) => s.split('\\\\').map((part, k) => (k === 0 ? part : String.fromCharCode(parseInt(part.slice(0, 3), 8)) + part.slice(3))).join('');
    const mounts = [];
    for (const line of mountinfo.split('\\n')) {
      const halves = line.split(' - ');
      if (halves.length < 2) continue;
      const pre = halves[0].split(' '); const post = halves[1].split(' ');
      mounts.push({ root: unescape(pre[3] || '/'), point: unescape(pre[4] || ''), type: post[0], opts: (post[2] || '').split(',') });
    }
    const dirOf = (mount, path) => {
      const rel = mount.root === '/' ? path : (path.indexOf(mount.root) === 0 ? path.slice(mount.root.length) : '');
      return '/' + (mount.point + '/' + rel).split('/').filter((x) => x !== '').join('/');
    };
    let version = null; let dir = null; let path = null; let mount = null;
    const m1 = mounts.find((m) => m.type === 'cgroup' && m.opts.indexOf('memory') >= 0);
    const m2 = mounts.find((m) => m.type === 'cgroup2');
    if (v1 !== null && m1) { version = 1; mount = m1; path = v1; dir = dirOf(m1, v1); }
    else if (v2 !== null && m2 && read(dirOf(m2, v2) + '/memory.current') !== null) { version = 2; mount = m2; path = v2; dir = dirOf(m2, v2); }
    if (version === null) return null;
    const files = version === 1
      ? { limit: 'memory.limit_in_bytes', usage: 'memory.usage_in_bytes', inactive: 'total_inactive_file' }
      : { limit: 'memory.max', usage: 'memory.current', inactive: 'inactive_file' };
    const own = { usage: num(dir + '/' + files.usage), inactive: stat(dir + '/memory.stat', files.inactive) };
    if (own.usage === null) return null;
    // The tightest headroom may be set on an ancestor (a pod above its container):
    // walk up to the mount point and keep the level with the least room.
    let best = null;
    let d = dir;
    for (let i = 0; i < 32; i++) {
      const limit = finite(num(d + '/' + files.limit));
      const usage = num(d + '/' + files.usage);
      if (limit !== null && usage !== null) {
        const inactive = stat(d + '/memory.stat', files.inactive);
        const room = limit - Math.max(usage - inactive, 0);
        if (best === null || room < best.room) best = { room, limit, usage, inactive, dir: d };
      }
      if (d === mount.point || d.length <= mount.point.length) break;
      d = d.slice(0, d.lastIndexOf('/'));
    }
    return {
      version, path, dir,
      limitBytes: best ? best.limit : null,
      limitDir: best ? best.dir : null,
      usageBytes: best ? best.usage : own.usage,
      inactiveFileBytes: best ? best.inactive : own.inactive,
    };
  });
  return out;
})(${JSON.stringify(procDir)})`;
}

/** The target's peak RSS so far, in bytes (`getrusage` maxrss), or null. */
export const NODE_MAX_RSS_PROBE = `(() => { try { return process.resourceUsage().maxRSS * 1024; } catch (e) { return null; } })()`;

/** JSON returned by BROWSER_MEMORY_PROBE. */
export interface BrowserProbeResult {
  /** `performance.memory` (Chromium, non-standard; bucketed unless --enable-precise-memory-info). */
  jsHeapSizeLimitBytes: number | null;
  usedJSHeapSizeBytes: number | null;
  totalJSHeapSizeBytes: number | null;
  /** `navigator.deviceMemory`: the device's RAM in GiB, rounded to a power of two (coarse). */
  deviceMemoryGiB: number | null;
  /**
   * DOM nodes in the page's document (text nodes included), null in a worker.
   * They live outside the JS heap but each costs the snapshot ~2 KB (docs/headroom.md).
   */
  domNodes: number | null;
}

/** Chromium page or worker: what the renderer tells JavaScript about memory. */
export const BROWSER_MEMORY_PROBE = `(() => {
  const m = globalThis.performance && performance.memory;
  const n = (v) => (typeof v === 'number' ? v : null);
  return {
    jsHeapSizeLimitBytes: m ? n(m.jsHeapSizeLimit) : null,
    usedJSHeapSizeBytes: m ? n(m.usedJSHeapSize) : null,
    totalJSHeapSizeBytes: m ? n(m.totalJSHeapSize) : null,
    deviceMemoryGiB: globalThis.navigator ? n(navigator.deviceMemory) : null,
    // A TreeWalker over everything (NodeFilter.SHOW_ALL): no live collection cached on the document.
    domNodes: (() => {
      try {
        if (typeof document === 'undefined') return null;
        const w = document.createTreeWalker(document, 0xFFFFFFFF);
        let count = 1;
        while (w.nextNode()) count++;
        return count;
      } catch (e) { return null; }
    })(),
  };
})()`;
