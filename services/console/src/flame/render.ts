/**
 * The flame graph itself, loaded only by pages that show one (a dynamic
 * import: d3-flame-graph with the eight d3 modules it uses, and its
 * stylesheet, are a 23.3 KiB gzipped chunk; the console's first script is
 * 46.3 KiB). d3-flame-graph (Apache-2.0) draws the icicle
 * in SVG; this file adds what it lacks: keyboard access to every frame (one
 * tab stop for the graph, then the arrow keys: up to the caller, down to the
 * first callee, left and right to the neighbours; Enter or Space zooms and
 * shows the frame's totals, like a click) and names for screen readers.
 */
import flamegraph, { type FlameNode } from 'd3-flame-graph';
import { select } from 'd3-selection';
import type { FlameDatum } from './types.ts';

/** A drawn flame graph. */
export interface FlameHandle {
  /** Redraws at a new width (the box's, on resize). */
  resize(width: number): void;
  resetZoom(): void;
  destroy(): void;
}

export interface FlameOptions {
  width: number;
  /** Fill of a frame. */
  colour(d: FlameDatum): string;
  /** Its name for a screen reader and its tooltip. */
  label(d: FlameDatum): string;
  /** Attributes the page's tests and styles read (data-change, data-function). */
  attributes(d: FlameDatum): Record<string, string>;
  onSelect(d: FlameDatum): void;
}

/** Draws `root` into `el` as an icicle (the root on top); frames narrower than a pixel are left out. */
export function drawFlameGraph(el: HTMLElement, root: FlameDatum, options: FlameOptions): FlameHandle {
  const chart = flamegraph<FlameDatum>()
    .width(options.width)
    .cellHeight(20)
    .inverted(true)
    .sort(false)
    .minFrameSize(1)
    .transitionDuration(0)
    .setColorMapper((d) => options.colour(d.data))
    .setLabelHandler((d) => options.label(d.data));
  const svg = (): SVGSVGElement | null => el.querySelector('svg');
  const frameOf = (node: FlameNode<FlameDatum> | null | undefined): SVGGElement | null => (node === null || node === undefined ? null : el.querySelector<SVGGElement>(`g.frame[data-node="${node.data.node}"]`));
  /** The frame with the graph's one tab stop (a roving tabindex): the root until the arrow keys move it. */
  let current = root.node;
  const moveTo = (g: SVGGElement | null): void => {
    if (g === null) return;
    el.querySelector<SVGGElement>('g.frame[tabindex="0"]')?.setAttribute('tabindex', '-1');
    g.setAttribute('tabindex', '0');
    current = Number(g.getAttribute('data-node'));
    g.focus();
  };
  /** The frame an arrow key leads to: the caller, the first drawn callee, or the drawn neighbour. */
  const next = (d: FlameNode<FlameDatum>, key: string): SVGGElement | null => {
    if (key === 'ArrowUp') return frameOf(d.parent);
    if (key === 'ArrowDown') return (d.children ?? []).map(frameOf).find((g) => g !== null) ?? null;
    const siblings = (d.parent?.children ?? []).map(frameOf).filter((g): g is SVGGElement => g !== null);
    const at = siblings.indexOf(frameOf(d)!);
    return siblings[key === 'ArrowLeft' ? at - 1 : at + 1] ?? null;
  };
  /** Every frame drawn gets a role and a name; redone after each redraw (zoom, resize), as d3 adds and removes frames. */
  const decorate = (): void => {
    select(el)
      .selectAll<SVGGElement, FlameNode<FlameDatum>>('g.frame')
      .attr('tabindex', (d) => (d.data.node === current ? 0 : -1))
      .attr('role', 'button')
      .attr('aria-label', (d) => options.label(d.data))
      .each(function (d) {
        for (const [k, v] of Object.entries(options.attributes(d.data))) this.setAttribute(k, v);
      })
      .on('keydown', function (event: KeyboardEvent, d) {
        if (event.key === 'Enter' || event.key === ' ') {
          event.preventDefault();
          this.dispatchEvent(new MouseEvent('click', { bubbles: true }));
        } else if (['ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight'].includes(event.key)) {
          event.preventDefault();
          moveTo(next(d, event.key));
        }
      });
    // A frame gone from the drawing (zoomed away) cannot hold the tab stop: the root takes it back.
    if (el.querySelector('g.frame[tabindex="0"]') === null) {
      current = root.node;
      el.querySelector<SVGGElement>(`g.frame[data-node="${root.node}"]`)?.setAttribute('tabindex', '0');
    }
    svg()?.setAttribute('aria-label', 'Flame graph: each frame is a function, under the function that called it; its width is its live bytes. Arrow keys move between frames, Enter zooms in.');
  };
  chart.onClick((d) => {
    decorate();
    // The clicked frame takes the tab stop and keeps the focus: d3 may have redrawn it.
    moveTo(frameOf(d));
    options.onSelect(d.data);
  });
  select(el).datum(root).call(chart);
  decorate();
  return {
    resize(width) {
      chart.width(width);
      chart.update();
      decorate();
    },
    resetZoom() {
      chart.resetZoom();
      decorate();
    },
    destroy() {
      chart.destroy();
      el.replaceChildren();
    },
  };
}
