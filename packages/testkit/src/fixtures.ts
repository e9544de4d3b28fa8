import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** The fixture files in packages/testkit/fixtures/. */
export type FixtureName =
  | 'heap-holder.cjs'
  | 'heap-holder.mjs'
  | 'heap-shapes.cjs'
  | 'allocator.cjs'
  | 'alloc-sites.cjs'
  | 'bundle-target.cjs'
  | 'make-bundle.cjs'
  | 'secrets-target.cjs'
  | 'page.html';

/** Absolute path of a fixture, for `startNodeTarget({ script: fixturePath('heap-holder.cjs') })`. */
export function fixturePath(name: FixtureName): string {
  return fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
}

interface HeapShapeModule {
  shapeFor(mb: number): { orders: number; lineItems: number };
}

const heapShape = createRequire(import.meta.url)('../fixtures/heap-shape.cjs') as HeapShapeModule;

/** Exact number of `Order` and `LineItem` objects a heap-holder with HEAP_MB=`mb` keeps alive. */
export function heapHolderShape(mb: number): { orders: number; lineItems: number } {
  return heapShape.shapeFor(mb);
}
