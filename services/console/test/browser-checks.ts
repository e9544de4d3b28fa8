/**
 * The checks every console page passes in Chromium, at a desktop (1440x900)
 * and a phone (390x844) size: axe-core finds no serious or critical
 * violation, and the page does not scroll sideways.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Page } from 'puppeteer-core';

// What the functions passed to page.evaluate read in the browser (the test files are typed for Node).
declare const innerWidth: number;
declare const document: { scrollingElement: { scrollWidth: number }; querySelectorAll(selector: string): ArrayLike<unknown> };
declare const axe: {
  run(context: unknown, options: unknown): Promise<{ passes: unknown[]; violations: { id: string; impact?: string | null; help: string; nodes: { target: string[] }[] }[] }>;
};

/** The sizes every view is checked at: a desktop, and a phone (issue 39). */
export const DESKTOP = { width: 1440, height: 900 };
export const PHONE = { width: 390, height: 844 };

let axeSource: string | undefined;

/**
 * axe-core on the page as it is: fails on serious or critical violations (WCAG
 * 2.x A/AA and axe's best practices). The source goes in through the DevTools
 * protocol, which the page's CSP (no inline script) does not apply to.
 */
export async function accessible(p: Page, name: string): Promise<void> {
  axeSource ??= await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  await p.evaluate(axeSource);
  const found = await p.evaluate(async () => {
    const r = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
    return { passes: r.passes.length, violations: r.violations.map((v) => ({ id: v.id, impact: v.impact ?? null, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 5) })) };
  });
  // A page axe could not read passes nothing: require that its rules ran.
  assert.ok(found.passes > 10, `${name}: axe-core ran ${found.passes} rules`);
  const minor = found.violations.filter((v) => v.impact !== 'serious' && v.impact !== 'critical');
  if (minor.length > 0) console.log(`${name}: axe-core (moderate/minor, not failing): ${minor.map((v) => `${v.id} at ${v.nodes.join(', ')}`).join('; ')}`);
  const bad = found.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad, [], `${name}: axe-core found ${bad.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.join(', ')}`).join('; ')}`);
}

/** Resize the page's viewport and wait until the page has laid itself out at that width. */
export async function resize(p: Page, size: { width: number; height: number }): Promise<void> {
  await p.setViewport(size);
  await p.waitForFunction((w: number) => innerWidth === w, { timeout: 15_000 }, size.width);
  // Two frames: ResizeObserver callbacks (the memory chart) run before the next paint.
  await p.evaluate(() => new Promise<void>((r) => (globalThis as unknown as { requestAnimationFrame(f: () => void): void }).requestAnimationFrame(() => (globalThis as unknown as { requestAnimationFrame(f: () => void): void }).requestAnimationFrame(() => r()))));
}

/** The page does not scroll sideways; when it does, the message names the elements that stick out. */
export async function fitsWidth(p: Page, name: string): Promise<void> {
  const found = await p.evaluate(() => {
    const wider = Array.from(document.querySelectorAll('body *') as unknown as ArrayLike<{ tagName: string; className: unknown; getBoundingClientRect(): { right: number } }>)
      .filter((e) => e.getBoundingClientRect().right > innerWidth + 0.5)
      .slice(0, 8)
      .map((e) => `${e.tagName.toLowerCase()}.${String(e.className)} (right ${Math.round(e.getBoundingClientRect().right)})`);
    return { scrollWidth: document.scrollingElement.scrollWidth, innerWidth, wider };
  });
  assert.ok(found.scrollWidth <= found.innerWidth, `${name}: the page is ${found.scrollWidth} px wide in a ${found.innerWidth} px window: ${found.wider.join(', ')}`);
}
