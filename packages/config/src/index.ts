/** @heapcap/config — configuration schemas, parsed once at process start. */
export { parseConfig, parseConfigAtEntry, ConfigError, type HeapcapConfig } from './env.ts';
export { parseStorageUrl, type StorageConfig, type FileStorageConfig, type S3StorageConfig, type S3Settings } from './storage.ts';
