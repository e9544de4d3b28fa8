/** Derived JSON documents (summary, analysis): one encoding for both stores. */
import { CaptureError } from '@heapcap/errors';

/** The stored text of a document: compact JSON (a summary of a large heap has thousands of rows), one trailing newline. */
export function documentBody(document: unknown): string {
  const text = JSON.stringify(document);
  if (typeof text !== 'string') throw new CaptureError('invalid_input', 'a derived document must be a JSON value');
  return `${text}\n`;
}

/** Parses a stored document; a corrupt one is `storage_failed` naming its key. */
export function parseDocument(key: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CaptureError('storage_failed', `the stored document ${key} is not JSON`, { hint: 'it was damaged in storage; delete it and produce it again', cause: err });
  }
}
