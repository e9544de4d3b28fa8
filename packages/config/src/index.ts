/** @heapcap/config — configuration schemas, parsed once at process start. */
export { parseConfig, parseConfigAtEntry, ConfigError, DEFAULT_API_URL, type HeapcapConfig, type ScheduleSettings, type WatchSettings } from './env.ts';
export { DurationSchema, formatDuration, parseDuration } from './duration.ts';
export { ID_PATTERN, IdSchema, newCaptureId } from './ids.ts';
export { bucketProblem, defaultS3QueueSize, S3_STORAGE_CLASSES, parseStorageUrl, type StorageConfig, type FileStorageConfig, type S3StorageConfig, type S3Settings } from './storage.ts';
export { DEFAULT_SLACK_API_URL, DEFAULT_SLACK_RESPONSE_HOSTS, publicUrlOf, type SlackConfig } from './slack.ts';
export { CONSOLE_PATH, consoleLinks, consoleUrl } from './console-links.ts';
export { DEFAULT_OIDC_SCOPES, type ConsoleAuthConfig, type OidcConfig } from './oidc.ts';
export { HEAPCAP_VERSION } from './version.ts';
export { closest, didYouMean, editDistance } from './suggest.ts';
export { assertUniqueNames, ConfigFileError, loadConfigFile, parseConfigText, positionInText, type ConfigFileIssue, type ConfigFileProblem, type LoadConfigFileOptions } from './file.ts';
export { RedactModeSchema, resolveRedaction, type RedactMode } from './redact.ts';
export { isClusterRedisUrl, parseRedisUrl, type RedisTarget } from './redis-url.ts';
export { PROFILE_DEFAULT_INTERVAL_BYTES, PROFILE_MAX_EVERY_MS, PROFILE_MAX_INTERVAL_BYTES, PROFILE_MIN_EVERY_MS, PROFILE_MIN_INTERVAL_BYTES, profileIntervalProblem } from './profile.ts';
