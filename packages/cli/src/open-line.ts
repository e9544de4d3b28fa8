/**
 * The `open:` line under a result the CLI prints: the console page of the
 * same thing, at the API the CLI talks to (the console is served there, at
 * /ui). The URL comes from the one builder of console links in @heapcap/config.
 */
import { consoleLinks } from '@heapcap/config';

/** What a result can open in the console. */
export type ConsolePage = { capture: string } | { hunt: string } | { compare: [base: string, head: string] };

/** `  open: https://…/ui/#/captures/ID` (a line, with its newline). */
export function openLine(apiUrl: string, page: ConsolePage): string {
  const url = 'capture' in page ? consoleLinks.capture(apiUrl, page.capture) : 'hunt' in page ? consoleLinks.hunt(apiUrl, page.hunt) : consoleLinks.compare(apiUrl, ...page.compare);
  return `  open: ${url}\n`;
}
