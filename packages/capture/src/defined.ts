/**
 * With `exactOptionalPropertyTypes` off, `{ x: undefined }` type-checks as
 * `{ x?: T }`, and callers pass optional values straight through. That is only
 * wrong where the presence of a key matters at runtime: an object spread over
 * defaults (`{ ...DEFAULTS, ...options }`: an explicit undefined would replace
 * the default), or a shape a test or a third-party API compares key by key.
 * There, this drops the undefined-valued keys.
 */
export function definedOnly<T extends object>(obj: T | undefined): { [K in keyof T]?: Exclude<T[K], undefined> } {
  const out: Partial<Record<keyof T, unknown>> = {};
  if (obj === undefined) return out as { [K in keyof T]?: Exclude<T[K], undefined> };
  for (const key of Object.keys(obj) as (keyof T)[]) {
    if (obj[key] !== undefined) out[key] = obj[key];
  }
  return out as { [K in keyof T]?: Exclude<T[K], undefined> };
}
