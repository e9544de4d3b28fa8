/**
 * Block Kit: the few blocks heapcap's messages use, built so that they always
 * fit Slack's limits (texts are cut at a grapheme boundary), and a checker
 * that measures a whole message against those limits. Slack rejects a message
 * that breaks any of them (`invalid_blocks`), which would lose the result of a
 * capture: the delivery path checks every message and falls back to plain text.
 */
import type { ActionsBlock, Button, ContextBlock, HeaderBlock, KnownBlock, SectionBlock } from '@slack/types';
import { fit } from './text.ts';

/** Slack's documented Block Kit limits (characters are UTF-16 units here: never more than Slack counts). */
export const LIMITS = {
  blocksPerMessage: 50,
  /** The top-level `text` (notification fallback): Slack truncates past 40,000; we keep it short. */
  messageText: 4_000,
  headerText: 150,
  sectionText: 3_000,
  sectionFields: 10,
  sectionFieldText: 2_000,
  contextElements: 10,
  contextText: 2_000,
  actionsElements: 25,
  buttonText: 75,
  buttonValue: 2_000,
  buttonUrl: 3_000,
  actionId: 255,
  blockId: 255,
} as const;

/** A message body for response_url or chat.postMessage. */
export interface SlackMessage {
  /** Notification and screen-reader fallback; always set. */
  text: string;
  /** Absent in a plain-text fallback. */
  blocks?: KnownBlock[];
  response_type?: 'ephemeral' | 'in_channel';
  replace_original?: boolean;
}

/** A header block (plain text, one line). */
export function header(text: string): HeaderBlock {
  return { type: 'header', text: { type: 'plain_text', text: fit(text, LIMITS.headerText), emoji: true } };
}

/** A section of mrkdwn text; `fields` are shown two per row. */
export function section(text: string | undefined, fields: string[] = []): SectionBlock {
  const block: SectionBlock = { type: 'section' };
  if (text !== undefined) block.text = { type: 'mrkdwn', text: fit(text, LIMITS.sectionText) };
  if (fields.length > 0) block.fields = fields.slice(0, LIMITS.sectionFields).map((f) => ({ type: 'mrkdwn', text: fit(f, LIMITS.sectionFieldText) }));
  return block;
}

/** A context block: small grey mrkdwn lines. */
export function context(...texts: string[]): ContextBlock {
  return { type: 'context', elements: texts.slice(0, LIMITS.contextElements).map((t) => ({ type: 'mrkdwn', text: fit(t, LIMITS.contextText) })) };
}

/** A button with an action id and a value (or a URL). */
export function button(text: string, actionId: string, value: string, style?: 'primary' | 'danger'): Button {
  return {
    type: 'button',
    text: { type: 'plain_text', text: fit(text, LIMITS.buttonText), emoji: true },
    action_id: actionId.slice(0, LIMITS.actionId),
    value: value.slice(0, LIMITS.buttonValue),
    style,
  };
}

/** An actions block holding `elements`. */
export function actions(blockId: string, ...elements: Button[]): ActionsBlock {
  return { type: 'actions', block_id: blockId.slice(0, LIMITS.blockId), elements: elements.slice(0, LIMITS.actionsElements) };
}

/** A mrkdwn code block: ``` fences, cut so that the fences survive. */
export function codeBlock(text: string, maxUnits: number = LIMITS.sectionText): string {
  return `\`\`\`${fit(text, maxUnits - 6)}\`\`\``;
}

function over(where: string, what: string, length: number, limit: number): string[] {
  return length > limit ? [`${where}: ${what} has ${length}, the limit is ${limit}`] : [];
}

/** Every way `message` breaks Slack's limits (empty when it fits). */
export function checkMessage(message: SlackMessage): string[] {
  const blocks = message.blocks ?? [];
  const problems = [...over('message', 'text', message.text.length, LIMITS.messageText), ...over('message', 'blocks', blocks.length, LIMITS.blocksPerMessage)];
  if (message.text.trim() === '') problems.push('message: text is empty (it is the notification fallback)');
  blocks.forEach((block, i) => {
    const at = `blocks[${i}] (${block.type})`;
    if (block.block_id !== undefined) problems.push(...over(at, 'block_id', block.block_id.length, LIMITS.blockId));
    switch (block.type) {
      case 'header':
        problems.push(...over(at, 'text', block.text.text.length, LIMITS.headerText));
        break;
      case 'section':
        if (block.text === undefined && (block.fields ?? []).length === 0) problems.push(`${at}: needs text or fields`);
        if (block.text !== undefined) problems.push(...over(at, 'text', block.text.text.length, LIMITS.sectionText));
        problems.push(...over(at, 'fields', (block.fields ?? []).length, LIMITS.sectionFields));
        for (const f of block.fields ?? []) problems.push(...over(at, 'field text', f.text.length, LIMITS.sectionFieldText));
        break;
      case 'context':
        problems.push(...over(at, 'elements', block.elements.length, LIMITS.contextElements));
        for (const e of block.elements) if ('text' in e && typeof e.text === 'string') problems.push(...over(at, 'element text', e.text.length, LIMITS.contextText));
        break;
      case 'actions':
        problems.push(...over(at, 'elements', block.elements.length, LIMITS.actionsElements));
        for (const e of block.elements) {
          if (e.type !== 'button') continue;
          problems.push(...over(at, 'button text', e.text.text.length, LIMITS.buttonText));
          problems.push(...over(at, 'action_id', (e.action_id ?? '').length, LIMITS.actionId));
          problems.push(...over(at, 'button value', (e.value ?? '').length, LIMITS.buttonValue));
          problems.push(...over(at, 'button url', (e.url ?? '').length, LIMITS.buttonUrl));
        }
        break;
      default:
    }
  });
  return problems;
}

/** `message` if it fits Slack's limits; otherwise its text alone (cut to fit), so it is still delivered. */
export function deliverable(message: SlackMessage): { message: SlackMessage; problems: string[] } {
  const problems = checkMessage(message);
  if (problems.length === 0) return { message, problems };
  const { blocks: _dropped, ...rest } = message;
  return { message: { ...rest, text: fit(message.text.trim() === '' ? 'heapcap' : message.text, LIMITS.messageText) }, problems };
}
