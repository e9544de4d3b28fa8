/**
 * Free text from callers (reasons, label values, page patterns): well-formed
 * Unicode only. JSON can carry a lone UTF-16 surrogate (`"\ud800"`), which is
 * not a character: stored and echoed back it breaks UTF-8 encoders, log
 * pipelines and Slack messages downstream, so it is refused at the boundary.
 */
import { z } from 'zod';

// With the u flag a surrogate pair is one code point (not Cs); only a lone half matches.
const LONE_SURROGATE = /\p{Cs}/u;

/** True when `s` has no lone UTF-16 surrogate. */
export function isWellFormed(s: string): boolean {
  return !LONE_SURROGATE.test(s);
}

/** A string of at most `max` characters with no lone UTF-16 surrogate. */
export function textSchema(max: number): z.ZodString {
  return z.string().max(max).refine(isWellFormed, 'must be well-formed Unicode (it contains a lone UTF-16 surrogate)');
}
