/** Request and response schemas of the allocation profile routes (shared with the OpenAPI document). */
import { z } from 'zod';
import { IdSchema } from '@heapcap/config';
import { ProfileSummarySchema } from '@heapcap/analysis';

export const ProfileQuerySchema = z.strictObject({
  format: z.enum(['summary', 'pprof']).default('summary').describe('summary: live bytes by allocation site (JSON); pprof: a gzipped pprof Profile (go tool pprof, Pyroscope, Grafana)'),
  limit: z.coerce.number().int().min(1).max(10_000).default(50).describe('allocation sites in the summary, most live bytes first'),
});

export const ProfileResponseSchema = z.object({ captureId: IdSchema, targetId: IdSchema, profile: ProfileSummarySchema }).describe('CaptureProfile');
