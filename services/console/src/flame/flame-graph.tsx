/**
 * An allocation profile as a flame graph (icicle: the root on top, each
 * function under its caller, widths by live bytes) with the totals of the
 * frame last clicked; for a growth tree (two profiles) sites whose own live
 * bytes grew are red, shrunk ones blue.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { bytes, signed } from '../format.ts';
import type { FlameHandle } from './render.ts';
import { change, nest, type FlameDatum, type ProfileTree, type TreeNode } from './types.ts';

const COLOURS = { grown: '#fca5a5', shrunk: '#93c5fd', same: '#e5e7eb' };
/** One profile: warm shades by depth-free hash, so a function keeps its colour across pages. */
const WARM = ['#fde68a', '#fcd34d', '#fdba74', '#fed7aa', '#fef3c7'];

function warm(name: string): string {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) | 0;
  return WARM[Math.abs(h) % WARM.length]!;
}

function label(tree: ProfileTree, d: FlameDatum): string {
  const n = tree.nodes[d.node]!;
  const growth = n.baseTotalBytes === undefined ? '' : `, ${signed(n.totalBytes - n.baseTotalBytes, bytes)} since the base`;
  return `${d.name}: ${bytes(n.totalBytes)} total, ${bytes(n.selfBytes)} self${growth}`;
}

/** The totals of one frame (the click's answer). */
function Details({ tree, node }: { tree: ProfileTree; node: TreeNode }) {
  const f = node.frame === null ? null : tree.frames[node.frame]!;
  const growth = node.baseSelfBytes !== undefined;
  return (
    <dl class="facts" data-testid="flame-details" aria-live="polite">
      <dt>Function</dt>
      <dd data-testid="flame-function">{f === null ? 'all live allocations (the root)' : <code>{f.functionName || '(anonymous)'}</code>}</dd>
      {f !== null && (
        <>
          <dt>Script</dt>
          <dd data-testid="flame-script">{f.url === '' ? '– (a builtin or V8 itself)' : <code>{f.url}</code>}</dd>
          <dt>Line, column</dt>
          <dd data-testid="flame-position">{f.line > 0 ? `${f.line}:${f.column} (the function's)` : '–'}</dd>
        </>
      )}
      <dt>Self live bytes</dt>
      <dd data-testid="flame-self">
        {bytes(node.selfBytes)}
        {growth && ` (base ${bytes(node.baseSelfBytes)}, ${signed(node.selfBytes - (node.baseSelfBytes ?? 0), bytes)})`}
      </dd>
      <dt>Total live bytes</dt>
      <dd data-testid="flame-total">
        {bytes(node.totalBytes)}
        {growth && ` (base ${bytes(node.baseTotalBytes)}, ${signed(node.totalBytes - (node.baseTotalBytes ?? 0), bytes)})`}
      </dd>
      <dt>Samples</dt>
      <dd data-testid="flame-samples">
        {node.selfSamples.toLocaleString('en')} self, {node.totalSamples.toLocaleString('en')} total
      </dd>
      <dt>Objects (estimated)</dt>
      <dd data-testid="flame-objects">
        {node.selfObjects.toLocaleString('en')} self, {node.totalObjects.toLocaleString('en')} total
      </dd>
    </dl>
  );
}

/** The flame graph of `tree`; its drawing code is loaded on first use. */
export function FlameGraph({ tree }: { tree: ProfileTree }) {
  const box = useRef<HTMLDivElement>(null);
  const handle = useRef<FlameHandle | null>(null);
  const [selected, setSelected] = useState<number | null>(null);
  const [failed, setFailed] = useState<string | null>(null);
  const growth = tree.base !== undefined;
  useEffect(() => {
    const el = box.current;
    const root = nest(tree);
    if (el === null || root === undefined) return;
    let live = true;
    let observer: ResizeObserver | undefined;
    import('./render.ts').then(
      ({ drawFlameGraph }) => {
        if (!live) return;
        handle.current = drawFlameGraph(el, root, {
          width: el.clientWidth,
          colour: (d) => (growth ? COLOURS[change(tree.nodes[d.node]!)] : warm(d.name)),
          label: (d) => label(tree, d),
          attributes: (d) => ({ 'data-node': String(d.node), 'data-function': tree.frames[tree.nodes[d.node]!.frame ?? -1]?.functionName ?? '', ...(growth ? { 'data-change': change(tree.nodes[d.node]!) } : {}) }),
          onSelect: (d) => setSelected(d.node),
        });
        let width = el.clientWidth;
        observer = new ResizeObserver(() => {
          if (el.clientWidth === width || el.clientWidth === 0) return;
          width = el.clientWidth;
          handle.current?.resize(width);
        });
        observer.observe(el);
      },
      (err: unknown) => live && setFailed(String(err)),
    );
    return () => {
      live = false;
      observer?.disconnect();
      handle.current?.destroy();
      handle.current = null;
    };
  }, [tree]);
  const node = selected === null ? undefined : tree.nodes[selected];
  return (
    <div class="flame-graph">
      <p class="muted">
        {bytes(tree.totalBytes)} live in {tree.samples.toLocaleString('en')} samples
        {tree.base !== undefined && ` (base ${bytes(tree.base.totalBytes)}, ${signed(tree.totalBytes - tree.base.totalBytes, bytes)})`}. Each frame is a function under its caller, as wide as
        the live bytes it and its callees allocated; Node's own <code>node:</code> frames and builtins are folded into their caller. Click a frame (or Tab to the graph, move with
        the arrow keys and press Enter) to zoom in and see its totals.
        {growth && (
          <>
            {' '}
            <span class="swatch-flame grown">red</span>: its own live bytes grew since the base; <span class="swatch-flame shrunk">blue</span>: they shrank; grey: unchanged (widths are the
            head's: a site gone since the base is in the table above).
          </>
        )}
      </p>
      {failed !== null && <p role="alert">The flame graph could not load: {failed}</p>}
      <div class="flame-box" ref={box} data-testid="flame-graph" />
      <div class="toolbar">
        <button type="button" onClick={() => handle.current?.resetZoom()}>
          Reset zoom
        </button>
      </div>
      {node === undefined ? <p class="muted">No frame chosen.</p> : <Details tree={tree} node={node} />}
    </div>
  );
}
