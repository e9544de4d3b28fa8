/**
 * A pass-through stage that hashes, counts and reads the header of the
 * uncompressed snapshot JSON on its way to a sink. It never holds more than
 * the first HEADER_LIMIT bytes.
 */
import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import type { SnapshotHeader } from './types.ts';

/** V8 writes the header (meta + counts) in the first few KiB; 256 KiB is ample. */
const HEADER_LIMIT = 256 * 1024;

/** Hashes (sha256) and counts the bytes passing through, and parses the snapshot header. */
export class SnapshotDigest extends Transform {
  readonly #hash: Hash = createHash('sha256');
  #bytes = 0;
  #head: Buffer[] = [];
  #headBytes = 0;
  /** Parse again once this many head bytes arrived: doubling keeps tiny chunks from costing O(n²). */
  #nextTryAt = 0;
  #header: SnapshotHeader | null | undefined = undefined;

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    this.#hash.update(chunk);
    this.#bytes += chunk.length;
    if (this.#header === undefined && this.#headBytes < HEADER_LIMIT) {
      // A copy: the chunk's block is reused once the sink has consumed it.
      this.#head.push(Buffer.from(chunk.subarray(0, HEADER_LIMIT - this.#headBytes)));
      this.#headBytes += Math.min(chunk.length, HEADER_LIMIT - this.#headBytes);
      if (this.#headBytes >= this.#nextTryAt || this.#headBytes >= HEADER_LIMIT) {
        this.#nextTryAt = this.#headBytes * 2;
        this.#tryHeader(false);
      }
    }
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    if (this.#header === undefined) this.#tryHeader(true);
    callback();
  }

  #tryHeader(final: boolean): void {
    const text = Buffer.concat(this.#head).toString('utf8');
    const header = parseSnapshotHeader(text);
    if (header !== undefined) {
      this.#header = header;
      this.#head = [];
    } else if (final || this.#headBytes >= HEADER_LIMIT) {
      this.#header = null;
      this.#head = [];
    }
  }

  /** Hex sha256 of everything that passed; valid after the stream finished. */
  get sha256(): string {
    return this.#hash.copy().digest('hex');
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** The parsed header, or null when it was not found. */
  get header(): SnapshotHeader | null {
    return this.#header ?? null;
  }
}

/**
 * Parse `{"snapshot":{"meta":{…},"node_count":N,"edge_count":M,…},"nodes":[` from the
 * beginning of a snapshot. Returns undefined while the text is too short to tell.
 */
export function parseSnapshotHeader(text: string): SnapshotHeader | null | undefined {
  const nodesAt = text.search(/,\s*"nodes"\s*:/);
  if (nodesAt < 0) return undefined;
  try {
    const parsed = JSON.parse(`${text.slice(0, nodesAt)}}`) as {
      snapshot?: {
        meta?: { node_fields?: unknown; edge_fields?: unknown };
        node_count?: unknown;
        edge_count?: unknown;
        trace_function_count?: unknown;
      };
    };
    const s = parsed.snapshot;
    if (s === undefined || typeof s.node_count !== 'number' || typeof s.edge_count !== 'number') return null;
    const nodeFields = Array.isArray(s.meta?.node_fields) ? s.meta.node_fields.map(String) : [];
    const edgeFields = Array.isArray(s.meta?.edge_fields) ? s.meta.edge_fields.map(String) : [];
    return {
      nodeCount: s.node_count,
      edgeCount: s.edge_count,
      ...(typeof s.trace_function_count === 'number' ? { traceFunctionCount: s.trace_function_count } : {}),
      nodeFields,
      edgeFields,
    };
  } catch {
    return null;
  }
}
