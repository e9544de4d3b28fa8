/**
 * The flame graph itself, loaded only by pages that show one (a dynamic
 * import: d3-flame-graph with the eight d3 modules it uses, and its
 * stylesheet, are a 23.0 KiB gzipped chunk; the console's first script is
 * 46.4 KiB). d3-flame-graph (Apache-2.0) draws the icicle
 * in SVG; this file adds what it lacks: keyboard access to every frame (Tab,
 * Enter or Space zooms and shows its totals, like a click) and names for
 * screen readers.
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
  /** Every frame drawn gets a tab stop, a role and a name; redone after each redraw (zoom, resize), as d3 adds and removes frames. */
  const decorate = (): void => {
    select(el)
      .selectAll<SVGGElement, FlameNode<FlameDatum>>('g.frame')
      .attr('tabindex', 0)
      .attr('role', 'button')
      .attr('aria-label', (d) => options.label(d.data))
      .each(function (d) {
        for (const [k, v] of Object.entries(options.attributes(d.data))) this.setAttribute(k, v);
      })
      .on('keydown', function (event: KeyboardEvent) {
        if (event.key !== 'Enter' && event.key !== ' ') return;
        event.preventDefault();
        this.dispatchEvent(new MouseEvent('click', { bubbles: true }));
      });
    svg()?.setAttribute('aria-label', 'Flame graph: each frame is a function, under the function that called it; its width is its live bytes');
  };
  chart.onClick((d) => {
    decorate();
    // The zoomed frame keeps the focus: d3 may have redrawn it.
    el.querySelector<SVGGElement>(`g.frame[data-node="${d.data.node}"]`)?.focus();
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
