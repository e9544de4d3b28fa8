/**
 * Where a hunt's surviving objects were allocated: the allocation stacks V8's
 * allocation tracker recorded (a hunt tracks allocations between its baseline
 * and target snapshots), per suspect part. V8 gives each stack frame the
 * function's position (where the function starts, 1-based), not the
 * statement's; frames of Node's own modules (`node:`) and builtins without a
 * script fold into their caller as the sampling profiles' do
 * (profile/profile-tree.ts), so the top frame is the application's code.
 */
import { z } from 'zod';
import { ProfileFrameSchema, type ProfileFrame } from './profile/profile-schema.ts';
import { frameKey, isFoldedFrame } from './profile/profile-tree.ts';
import { shortScript } from './scope-script.ts';

/** One allocation stack of a part's instances: top frame first. */
export const AllocationStackSchema = z.object({
  frames: z.array(ProfileFrameSchema).min(1),
  /** Instances of the part allocated there. */
  count: z.number().int().nonnegative(),
  /** Their self size. */
  bytes: z.number().nonnegative(),
});
export type AllocationStack = z.infer<typeof AllocationStackSchema>;

/**
 * Where a suspect part's surviving new instances were allocated: hunts that tracked allocations (`source`
 * `tracked`, or absent in records written before it), or the grown stacks of the sampling profiles beside a
 * diff's two snapshots that hold a frame of the part's class name, its constructor (`sampled`;
 * profile/suspect-sites.ts): then `count` is grown samples, `bytes` grown live bytes (scaled), most bytes first.
 */
export const AllocatedAtSchema = z.object({
  source: z.enum(['tracked', 'sampled']).optional(),
  /** The stacks of most instances first (at most {@link MAX_STACKS}). */
  stacks: z.array(AllocationStackSchema),
  /** The part's surviving new instances (sampled: the grown samples of every matching stack). */
  instances: z.number().int().nonnegative(),
  /** Of those, the ones V8 gave a stack (the others have a trace node without a function, or none). */
  withStack: z.number().int().nonnegative(),
});
export type AllocatedAt = z.infer<typeof AllocatedAtSchema>;

/** Stacks kept per part, and frames per stack. */
export const MAX_STACKS = 3;
export const MAX_FRAMES = 8;

/** A frame of the tracker's function infos (1-based line and column; 0 when V8 gives none). */
export interface TraceFrame {
  name: string;
  script: string;
  line: number;
  column: number;
}

/**
 * The folded stack of a chain of frames (top first): folded frames are left
 * out; a chain of folded frames only keeps its top frame; frames V8 left
 * empty (no name, no script) count as no stack.
 */
export function foldStack(chain: readonly TraceFrame[]): ProfileFrame[] {
  const frames = chain.filter((f) => f.name !== '' || f.script !== '').map((f): ProfileFrame => ({ functionName: f.name, url: f.script, line: f.line, column: f.column }));
  const kept = frames.filter((f) => !isFoldedFrame({ functionName: f.functionName, url: f.url, lineNumber: f.line - 1, columnNumber: f.column - 1 }));
  const out = kept.length > 0 ? kept : frames.slice(0, 1);
  return out.slice(0, MAX_FRAMES);
}

/** Counts one part's instances by folded stack. */
export class AllocatedAtBuilder {
  readonly #stacks = new Map<string, AllocationStack>();
  #instances = 0;
  #withStack = 0;

  /** One instance of `bytes`, allocated at `frames` (empty: no stack). */
  add(frames: readonly ProfileFrame[], bytes: number): void {
    this.#instances++;
    if (frames.length === 0) return;
    this.#withStack++;
    const key = frames.map(frameKey).join('\u0001');
    const row = this.#stacks.get(key);
    if (row === undefined) this.#stacks.set(key, { frames: [...frames], count: 1, bytes });
    else {
      row.count++;
      row.bytes += bytes;
    }
  }

  /** The part's {@link AllocatedAt}: most instances first, then most bytes. */
  finish(): AllocatedAt {
    const stacks = [...this.#stacks.values()].sort((a, b) => b.count - a.count || b.bytes - a.bytes).slice(0, MAX_STACKS);
    return { stacks, instances: this.#instances, withStack: this.#withStack };
  }
}

/** A script as the suspects' lines name it: a file's last two path segments; a data: URL (a test page) as `data:`. */
function scriptWords(url: string): string {
  return url.startsWith('data:') ? 'data:' : shortScript(url);
}

/** `src/session.js:44 createSession`: a frame in the words of the suspects' lines (short script, function line). */
function frameWords(f: ProfileFrame): string {
  const name = f.functionName === '' ? '(anonymous)' : f.functionName;
  if (f.url === '') return name;
  return `${scriptWords(f.url)}${f.line > 0 ? `:${f.line}` : ''} ${name}`;
}

/**
 * `allocated at src/session.js:44 createSession ← src/routes/login.js:12`: the
 * first stack of `at` (top frame with its function, then the callers' places,
 * at most three), what every channel prints under a suspect; undefined when
 * no instance had a stack.
 */
export function allocatedAtLine(at: AllocatedAt | undefined): string | undefined {
  const stack = at?.stacks[0];
  if (stack === undefined) return undefined;
  const [top, ...callers] = stack.frames as [ProfileFrame, ...ProfileFrame[]];
  const rest = callers.slice(0, 2).map((f) => (f.url === '' ? frameWords(f) : `${scriptWords(f.url)}${f.line > 0 ? `:${f.line}` : ''}`));
  // Not every instance gets a stack from V8: say how many did when some did not.
  const share = at !== undefined && at.withStack < at.instances ? ` (${at.withStack.toLocaleString('en-US')} of ${at.instances.toLocaleString('en-US')} with a stack)` : '';
  // A sampled site is a constructor frame's match in the profiles beside the snapshots, not each object's own stack.
  const sampled = at?.source === 'sampled' ? ' (sampled: its constructor in the allocation profiles)' : '';
  return ['allocated at ' + frameWords(top), ...rest].join(' ← ') + share + sampled;
}

/** The allocatedAt of a suspect's parts to print: the first part (lead first) whose instances had a stack. */
export function suspectAllocatedAt(parts: readonly { allocatedAt?: AllocatedAt | undefined }[] | undefined): AllocatedAt | undefined {
  return parts?.find((p) => (p.allocatedAt?.stacks.length ?? 0) > 0)?.allocatedAt;
}
