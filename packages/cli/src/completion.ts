/**
 * `heapcap completion bash|zsh`: a completion script for the shell, built from
 * the same flag specs the commands parse, so it cannot offer a flag a command
 * refuses. Commands, subcommands and flags complete; anything else falls back
 * to file names (snapshot files for analyze and diff).
 */
import { CAPTURE_OPTIONS } from './capture-args.ts';
import { TRIGGER_FLAGS } from './trigger.ts';
import { CREATE_FLAGS } from './schedules-args.ts';
import { HUNT_OPTIONS } from './hunt.ts';
import { ANALYZE_OPTIONS } from './analyze.ts';
import { DIFF_OPTIONS } from './diff.ts';
import { TARGETS_SUBCOMMANDS } from './targets.ts';
import { CAPTURES_SUBCOMMANDS } from './captures.ts';
import { PROFILES_SUBCOMMANDS } from './profiles.ts';
import { WATCH_SUBCOMMANDS } from './watch.ts';
import type { Subcommand } from './api-command.ts';

/** A command's words after it: its flags, or its subcommands with theirs. */
type Node = { flags: string[] } | { subs: Record<string, string[]> };

const flagsOf = (spec: Record<string, unknown>): string[] => [...Object.keys(spec).map((k) => `--${k}`), '--help'];
const group = (subs: Record<string, Subcommand>): Node => ({ subs: Object.fromEntries(Object.entries(subs).map(([name, s]) => [name, flagsOf({ ...s.flags, json: true })])) });

/** Every command `heapcap` dispatches, in the order `heapcap --help` lists them. */
export const COMMAND_TREE: Record<string, Node> = {
  capture: { flags: flagsOf(CAPTURE_OPTIONS) },
  serve: { flags: ['--dev', '--help'] },
  api: { flags: ['--dev', '--help'] },
  worker: { flags: ['--help'] },
  trigger: { flags: flagsOf(TRIGGER_FLAGS) },
  status: { flags: ['--json', '--help'] },
  targets: group(TARGETS_SUBCOMMANDS),
  captures: group(CAPTURES_SUBCOMMANDS),
  profiles: group(PROFILES_SUBCOMMANDS),
  watch: group(WATCH_SUBCOMMANDS),
  schedules: { subs: { list: ['--json', '--help'], show: ['--json', '--help'], create: flagsOf(CREATE_FLAGS), pause: ['--json', '--help'], resume: ['--json', '--help'], delete: ['--json', '--help'] } },
  hunt: { subs: { start: flagsOf(HUNT_OPTIONS), show: ['--json', '--help'] } },
  analyze: { flags: flagsOf(ANALYZE_OPTIONS) },
  diff: { flags: flagsOf(DIFF_OPTIONS) },
  completion: { subs: { bash: [], zsh: [] } },
  version: { flags: [] },
  help: { flags: [] },
};

/** The command names (for "did you mean" on an unknown one). */
export const COMMANDS: readonly string[] = Object.keys(COMMAND_TREE);

/** Sets `w` to the words that may follow, from `cmd`, `sub` and `pos` (the index of the word being completed): the same in bash and zsh. */
function wordsFor(): string {
  const i = '      ';
  const lines: string[] = [];
  for (const [cmd, node] of Object.entries(COMMAND_TREE)) {
    if ('flags' in node) lines.push(`${i}${cmd}) w="${node.flags.join(' ')}" ;;`);
    else {
      const inner = Object.entries(node.subs).map(([sub, flags]) => `${i}    ${sub}) w="${flags.join(' ')}" ;;`);
      lines.push(`${i}${cmd}) if [[ $pos -eq 2 ]]; then w="${Object.keys(node.subs).join(' ')}"; else\n${i}  case "$sub" in\n${inner.join('\n')}\n${i}  esac; fi ;;`);
    }
  }
  return `  if [[ $pos -le 1 ]]; then\n    w="${COMMANDS.join(' ')}"\n  else\n    case "$cmd" in\n${lines.join('\n')}\n    esac\n  fi`;
}

/** The bash script (`source <(heapcap completion bash)`, or save it under bash-completion's completions dir). */
export function bashCompletion(): string {
  return `# bash completion for heapcap: source <(heapcap completion bash)
_heapcap() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" cmd="\${COMP_WORDS[1]}" sub="\${COMP_WORDS[2]}" pos=$COMP_CWORD w=""
${wordsFor()}
  COMPREPLY=($(compgen -W "$w" -- "$cur"))
}
complete -o default -F _heapcap heapcap
`;
}

/** The zsh script (`source <(heapcap completion zsh)` after compinit, or save it as _heapcap on $fpath). */
export function zshCompletion(): string {
  return `#compdef heapcap
# zsh completion for heapcap: source <(heapcap completion zsh) after compinit,
# or save it as _heapcap in a directory on $fpath.
_heapcap() {
  local cmd="\${words[2]}" sub="\${words[3]}" pos=$((CURRENT - 1)) w=""
${wordsFor()}
  [[ -n "$w" ]] && compadd -- \${=w}
  # Words that are not flags may be files (heapcap analyze FILE, diff BASE HEAD).
  if [[ "\${words[CURRENT]}" != -* && ( -z "$w" || "$w" == --* ) ]]; then
    _files
  fi
}
if [[ "\${zsh_eval_context[-1]}" == loadautofunc ]]; then
  _heapcap "$@"
else
  compdef _heapcap heapcap
fi
`;
}
