/** Response schemas shared by every route: the error envelope. */
import { z } from 'zod';
import { API_ERROR_STATUS } from '../errors.ts';

const codes = Object.keys(API_ERROR_STATUS) as [keyof typeof API_ERROR_STATUS, ...(keyof typeof API_ERROR_STATUS)[]];

/** `{ error: { code, message, details } }`. */
export const ErrorResponseSchema = z
  .object({
    error: z.object({
      code: z.enum(codes).describe('stable error code: match on this, never on the message'),
      message: z.string(),
      details: z.record(z.string(), z.unknown()),
    }),
  })
  .describe('Error');

/** The error responses a route can give, for its OpenAPI entry. */
export function errorResponses<const S extends number>(...statuses: S[]): Record<S, typeof ErrorResponseSchema> {
  return Object.fromEntries(statuses.map((s) => [s, ErrorResponseSchema])) as Record<S, typeof ErrorResponseSchema>;
}
