/** One class's change between two summaries: the row of a diff, which suspects (suspects.ts) rank when no graph is at hand. */
import { z } from 'zod';

export const SideSchema = z.object({ count: z.number(), selfSize: z.number(), retainedSize: z.number().optional() });

export const ClassDeltaSchema = z.object({
  name: z.string(),
  /** `new`: absent from base; `vanished`: absent from head. */
  status: z.enum(['new', 'vanished', 'grown', 'shrunk', 'unchanged']),
  base: SideSchema.nullable(),
  head: SideSchema.nullable(),
  countDelta: z.number(),
  selfSizeDelta: z.number(),
  /** Only when both captures were analysed. */
  retainedSizeDelta: z.number().optional(),
});
export type ClassDelta = z.infer<typeof ClassDeltaSchema>;
