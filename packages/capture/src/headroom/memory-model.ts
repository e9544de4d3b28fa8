/**
 * How much memory a heap snapshot costs the target, as a function of what
 * preflight can see cheaply: extra RSS ≈ factor × JS heap used + constant.
 *
 * While V8 builds a snapshot it keeps its own copy of the object graph
 * (entries, edges, names) outside the JS heap, so `--max-old-space-size` does
 * not bound it; only the container or host does. The coefficients are fitted
 * by `bench/headroom-model.ts` (peak RSS from the target's VmHWM) and the data
 * and each point's error are in docs/headroom.md. Refit there; do not tune here.
 */
import { definedOnly } from '../defined.ts';
import { parseV8Version } from '../v8-version.ts';

/** Runtimes whose snapshot cost was measured separately. */
export type ModelFamily = 'node-v8-11' | 'node-v8-12' | 'chromium';

/** Coefficients of one family: extra bytes ≈ max(factor × heap used + constantBytes, minimumBytes). */
export interface MemoryModel {
  family: ModelFamily;
  factor: number;
  constantBytes: number;
  /**
   * What any snapshot costs, however small the heap: V8's generator, the
   * serializer's buffers and the inspector's messages (Node: 33–44 MB extra
   * measured at 3–4 MB of heap, docs/headroom.md "Heap shape").
   */
  minimumBytes: number;
  /**
   * Chromium: what each DOM node costs the snapshot. The DOM lives outside the
   * JS heap (heap used does not see it) but the snapshot walks it.
   */
  perDomNodeBytes: number;
}

/** Per-target override (configuration): replaces the fitted coefficients. */
export type MemoryModelOverride = Partial<Pick<MemoryModel, 'factor' | 'constantBytes'>>;

const MB = 1024 * 1024;
/** Chromium 156: snapshot cost per DOM node, text nodes included (1.45–2.06 KB measured on 210k–630k-node pages; docs/headroom.md). */
const PER_DOM_NODE = 1850;

/**
 * Fitted coefficients; see docs/headroom.md for the data behind each. Fitted to
 * err on the high side: on the measured points no estimate is more than ~7%
 * below the measured extra memory, and none more than 25% above it.
 */
export const MEMORY_MODELS: Readonly<Record<ModelFamily, MemoryModel>> = {
  // Node 20.20.2 (V8 11.3): 11 points, 6-326 MB heap used, errors -5.4%..+22.9%.
  'node-v8-11': { family: 'node-v8-11', factor: 7.4, constantBytes: 2 * MB, minimumBytes: 40 * MB, perDomNodeBytes: 0 },
  // Node 22.23.3 (V8 12.4): 11 points, 7-325 MB heap used, errors -6.6%..+23.2%.
  'node-v8-12': { family: 'node-v8-12', factor: 7.3, constantBytes: 0, minimumBytes: 40 * MB, perDomNodeBytes: 0 },
  // Headless Chromium 156 (V8 15.6), the renderer process: pointer compression halves
  // the heap but not the snapshot's per-object cost, hence twice Node's factor.
  // 10 points, 3-217 MB heap used, errors +0.2%..+9.5%.
  chromium: { family: 'chromium', factor: 16.75, constantBytes: 48 * MB, minimumBytes: 48 * MB, perDomNodeBytes: PER_DOM_NODE },
};

/**
 * The family whose measurements fit a target best. Node with V8 < 12 (Node ≤ 20)
 * and ≥ 12 (Node 22+) were measured apart; an unknown V8 version gets the more
 * expensive Node family, so the gate errs on refusing.
 */
export function modelFamily(product: 'node' | 'chromium', v8Version: string | undefined): ModelFamily {
  if (product === 'chromium') return 'chromium';
  const major = v8Version === undefined ? undefined : parseV8Version(v8Version)?.[0];
  if (major === undefined) return costlierNodeFamily();
  return major < 12 ? 'node-v8-11' : 'node-v8-12';
}

function costlierNodeFamily(): ModelFamily {
  const a = MEMORY_MODELS['node-v8-11'];
  const b = MEMORY_MODELS['node-v8-12'];
  return a.factor >= b.factor ? a.family : b.family;
}

/** The model for a target, with the per-target override applied. */
export function modelFor(product: 'node' | 'chromium', v8Version: string | undefined, override?: MemoryModelOverride): MemoryModel {
  const base = MEMORY_MODELS[modelFamily(product, v8Version)];
  return { ...base, ...definedOnly({ factor: override?.factor, constantBytes: override?.constantBytes }) };
}

/** Estimated extra resident memory (bytes) the target needs while the snapshot is built and sent. */
export function estimateExtraBytes(model: MemoryModel, heapUsedBytes: number, domNodes = 0): number {
  // An override may carry a negative constant; the estimate never goes below the family's minimum.
  return Math.max(0, model.minimumBytes, Math.round(model.factor * heapUsedBytes + model.constantBytes + model.perDomNodeBytes * domNodes));
}
