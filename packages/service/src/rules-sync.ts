/**
 * HEAPCAP_RULES_FILE kept applied: read at start and whenever the file
 * changes, checked whole (YAML syntax, the schema, then the same checks the
 * API makes of a body), and applied by the queue's RulesFileApplier under its
 * lock. A file that fails any check is refused whole: nothing is written, the
 * rules already applied stay, and the log says where (file:line:column).
 *
 * Change detection watches the file's directory, not the file: an editor's
 * save-by-rename and Kubernetes' ConfigMap update (a new `..data` symlink
 * renamed over the old one) replace the file's inode, and a watch on the old
 * inode would never fire again. A poll of the content every few seconds backs
 * the watch up where inotify does not reach (network filesystems, some
 * container mounts). Either way only a change of the text triggers an apply.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { Logger } from 'pino';
import { ConfigFileError, parseConfigText, positionInText, type HeapcapConfig } from '@heapcap/config';
import { checkRulesFile, RulesFileSchema, type HeapcapQueue, type RulesApplyReport, type RulesFileIssue } from '@heapcap/state';

/** The outcome of one look at the file. */
export type RulesSyncOutcome = 'applied' | 'unchanged' | 'refused';

/** What the last look found, for logs and /readyz. */
export interface RulesFileStatus {
  file: string;
  /** The last read was refused: why (file:line:column: path: message, …); undefined when it applied. */
  refused: string | undefined;
  /** Texts refused since this process started (a missing file counts once until it changes). */
  refusals: number;
}

/** How often the content is compared besides the directory watch. */
const POLL_MS = 5_000;
/** Several events arrive for one save (write, rename, chmod): one apply after they settle. */
const SETTLE_MS = 100;

/** Applies the rules file and keeps it applied. */
export class RulesFileSync {
  readonly #queue: HeapcapQueue;
  readonly #config: HeapcapConfig;
  readonly #path: string;
  readonly #log: Logger;
  /** The text last looked at (applied or refused): the same text again is not re-checked. */
  #lastText: string | undefined;
  #refused: string | undefined;
  #watcher: FSWatcher | undefined;
  #poll: NodeJS.Timeout | undefined;
  #settle: NodeJS.Timeout | undefined;
  #running: Promise<RulesSyncOutcome> | undefined;
  #again = false;
  #stopped = false;
  #refusals = 0;

  constructor(queue: HeapcapQueue, config: HeapcapConfig, path: string, log: Logger) {
    this.#queue = queue;
    this.#config = config;
    this.#path = path;
    this.#log = log.child({ rulesFile: path });
  }

  /** What the last look found. */
  status(): RulesFileStatus {
    return { file: this.#path, refused: this.#refused, refusals: this.#refusals };
  }

  /**
   * Apply the file again even if its text did not change: Redis lost its data
   * and the rules with it (targets-sync.ts notices). Never rejects.
   */
  resync(): Promise<RulesSyncOutcome> {
    this.#lastText = undefined;
    this.#log.warn(`applying the rules file ${this.#path} again: Redis lost its data, and the rules with it`);
    return this.sync();
  }

  /** Look at the file now (one look at a time; a call during a look runs once more after it). Never rejects. */
  sync(): Promise<RulesSyncOutcome> {
    if (this.#running !== undefined) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      let outcome: RulesSyncOutcome;
      do {
        this.#again = false;
        outcome = await this.#look().catch((err: unknown) => {
          // Redis down or the lock held too long: the text is not marked as seen, so the next event or poll tries again.
          this.#lastText = undefined;
          this.#log.warn({ err: (err as Error).message }, 'rules file not applied (will retry)');
          return 'refused' as const;
        });
      } while (this.#again && !this.#stopped);
      return outcome;
    })().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /** Start watching (after the first `sync`). */
  watch(): void {
    const onEvent = (_event: string, name: string | Buffer | null): void => {
      // A ConfigMap swaps `..data`; an editor renames a temp file over ours. Other files in the directory do not matter.
      const n = name === null ? null : String(name);
      if (n !== null && n !== basename(this.#path) && !n.startsWith('..')) return;
      clearTimeout(this.#settle);
      this.#settle = setTimeout(() => void this.sync(), SETTLE_MS);
      this.#settle.unref();
    };
    try {
      this.#watcher = watch(dirname(this.#path), { persistent: false }, onEvent);
      this.#watcher.on('error', (err) => this.#log.warn({ err: err.message }, 'rules file watch failed; polling every 5 s only'));
    } catch (err) {
      this.#log.warn({ err: (err as Error).message }, 'cannot watch the rules file directory; polling every 5 s only');
    }
    this.#poll = setInterval(() => void this.sync(), POLL_MS);
    this.#poll.unref();
  }

  /** Stop watching (idempotent); resolves when a look in progress ends. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#watcher?.close();
    clearInterval(this.#poll);
    clearTimeout(this.#settle);
    await this.#running;
  }

  async #look(): Promise<RulesSyncOutcome> {
    let text: string;
    try {
      text = await readFile(this.#path, 'utf8');
    } catch (err) {
      // Missing or unreadable: refused like a bad file (an empty registry of rules is declared by an empty file, never by its absence).
      return this.#refuse(undefined, `${this.#path}: cannot read the rules file: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, []);
    }
    if (text === this.#lastText) return 'unchanged';
    this.#lastText = text;
    let file;
    try {
      file = parseConfigText(text, RulesFileSchema, this.#path);
    } catch (err) {
      if (!(err instanceof ConfigFileError)) throw err;
      const issues = err.problem === 'syntax' ? [] : err.issues.map((i) => ({ path: i.path, message: i.message, line: i.line, column: i.column }));
      return this.#refuse(text, err.problem === 'syntax' ? err.message : '', issues, err.line, err.column);
    }
    const targets = (await this.#queue.targets.list()).map((e) => e.target);
    const { schedules, watch } = this.#config;
    const ctx = { minIntervalMs: schedules.minIntervalMs, watchIntervalMs: watch.intervalMs, watchRetentionMs: watch.retentionMs, targets };
    const problems = checkRulesFile(file, ctx);
    if (problems.length > 0) return this.#refuse(text, '', this.#located(text, problems));
    const report = await this.#queue.rulesFile.apply(file, ctx);
    if (report.conflicts.length > 0) return this.#refuse(text, '', this.#located(text, report.conflicts));
    this.#refused = undefined;
    this.#log.info({ schedules: file.schedules.length, watchRules: file.watchRules.length, changed: changes(report) }, 'rules file applied');
    return 'applied';
  }

  #located(text: string, issues: RulesFileIssue[]): Array<RulesFileIssue & { line?: number; column?: number }> {
    return issues.map((i) => ({ ...i, ...positionInText(text, i.path) }));
  }

  #refuse(text: string | undefined, syntax: string, issues: Array<RulesFileIssue & { line?: number; column?: number }>, line?: number, column?: number): RulesSyncOutcome {
    const why =
      syntax !== ''
        ? syntax
        : issues.map((i) => `${this.#path}${i.line === undefined ? '' : `:${i.line}:${i.column ?? 1}`}: ${i.path === '' ? '(top level)' : i.path}: ${i.message}`).join('; ');
    // A missing file is looked at again at every poll: said once, not every 5 s.
    const repeated = text === undefined && why === this.#refused;
    this.#refused = why;
    if (repeated) return 'refused';
    this.#refusals += 1;
    this.#log.error(
      { code: 'invalid_config', line: line ?? issues[0]?.line, column: column ?? issues[0]?.column, issues },
      `rules file refused, the rules already applied stay: ${why}`,
    );
    return 'refused';
  }
}

function changes(r: RulesApplyReport): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [kind, c] of [
    ['schedules', r.schedules],
    ['watchRules', r.watchRules],
  ] as const) {
    for (const [what, ids] of Object.entries(c)) if (ids.length > 0) out[`${kind}.${what}`] = ids;
  }
  return out;
}
