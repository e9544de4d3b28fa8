/** @heapcap/cli — the `heapcap` command. */
export { EXIT, exitCodeFor } from './exit-codes.ts';
export { FlagError, lastValue, parseFlags, type FlagSpec, type Flags } from './flags.ts';
export { triggerMain, parseTriggerArgs, TRIGGER_USAGE } from './trigger.ts';
export { statusMain, STATUS_USAGE } from './status.ts';
export { huntMain, parseHuntArgs, HUNT_USAGE } from './hunt.ts';
export { schedulesMain, SCHEDULES_USAGE } from './schedules.ts';
export { parseCreateArgs, parseSelectorArg, type ScheduleBody } from './schedules-args.ts';
export { formatSchedules, type ScheduleViewLike } from './schedules-format.ts';
export type { CliIo } from './status-client.ts';
export { runCli, type ServiceCommand, type ServiceCommands } from './run.ts';
export { targetsMain, TARGETS_SUBCOMMANDS } from './targets.ts';
export { capturesMain, CAPTURES_SUBCOMMANDS, downloadName } from './captures.ts';
export { profilesMain, PROFILES_SUBCOMMANDS, formatProfileSummary } from './profiles.ts';
export { watchMain, WATCH_SUBCOMMANDS } from './watch.ts';
export { closest, editDistance } from '@heapcap/config';
