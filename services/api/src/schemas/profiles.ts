/** Request and response schemas of the allocation profile routes (shared with the OpenAPI document). */
import { z } from 'zod';
import { IdSchema } from '@heapcap/config';
import { ProfileSummarySchema, ProfileTreeDiffSchema, ProfileTreeSchema } from '@heapcap/analysis';

export const ProfileQuerySchema = z.strictObject({
  format: z
    .enum(['summary', 'pprof', 'tree'])
    .default('summary')
    .describe('summary: live bytes by allocation site (JSON); pprof: a gzipped pprof Profile (go tool pprof, Pyroscope, Grafana); tree: the folded call tree with self and total bytes per node (flame graphs)'),
  base: IdSchema.optional().describe('with format=tree: another sampling-profile capture of the target; the tree then holds both sides (the growth tree, base → this capture)'),
  force: z.enum(['true', 'false', '1', '0']).optional().describe('with base: compare profiles of different targets (refused with target_mismatch otherwise)'),
  limit: z.coerce.number().int().min(1).max(10_000).default(50).describe('allocation sites in the summary, most live bytes first'),
});

export const ProfileResponseSchema = z.object({ captureId: IdSchema, targetId: IdSchema, profile: ProfileSummarySchema }).describe('CaptureProfile');

export const ProfileTreeResponseSchema = z
  .object({ captureId: IdSchema, targetId: IdSchema, baseId: IdSchema.nullable().describe('the base capture of a growth tree; null for one profile'), tree: z.union([ProfileTreeDiffSchema, ProfileTreeSchema]) })
  .describe('CaptureProfileTree');
