/**
 * The scanner's integer arrays in WebAssembly (numbers.wat): a window of the
 * chunk is copied into the module's memory, the values are counted (skip) or
 * parsed into the batch, which lives in that memory too. ~3× cheaper than the
 * JavaScript loops for the edges the summary only counts, ~1.3× for the nodes
 * it reads (see scanner.ts).
 */
import { NUMBERS_WASM } from './numbers-wasm.ts';

/** Bytes copied in per call (the module's input area). */
export const NUMBERS_WINDOW = 256 * 1024;
/** Values per batch (the module's output area). */
export const NUMBERS_BATCH = 16_384;
const OUT = NUMBERS_WINDOW + 64;
const PARSE_BYTES_PER_VALUE = 5;

/** What this module uses of WebAssembly (the workspace's TypeScript libs do not declare it). */
interface Exports {
  memory: { readonly buffer: ArrayBuffer };
  count: { readonly value: number };
  skip(start: number, end: number): number;
  parse(start: number, end: number, out: number, max: number): number;
}
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: Exports };
}
/** Compiled once per process (a 600-byte module). */
let compiled: object | undefined;
/**
 * Instances given back by finished scanners. V8 reserves address space for
 * each WebAssembly memory (guard regions, gigabytes of it, until a GC), so
 * scanners that follow each other reuse a few instead of making one each.
 */
const spare: NumberKernel[] = [];
const SPARE_KERNELS = 4;

/** One scanner's instance: its own memory, so scanners never share a batch. */
export class NumberKernel {
  /** A spare instance, or a new one. */
  static take(): NumberKernel {
    return spare.pop() ?? new NumberKernel();
  }

  readonly #exports: Exports;
  readonly #input: Uint8Array;
  /** The batch the parsed values go to (NUMBERS_BATCH of them), in the module's memory. */
  readonly batch: Float64Array;
  /** Values the last call took. */
  count = 0;

  private constructor() {
    const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
    compiled ??= new wasm.Module(NUMBERS_WASM);
    this.#exports = new wasm.Instance(compiled).exports;
    // The memory never grows, so these views stay valid.
    this.#input = new Uint8Array(this.#exports.memory.buffer, 0, NUMBERS_WINDOW);
    this.batch = new Float64Array(this.#exports.memory.buffer, OUT, NUMBERS_BATCH);
  }

  /**
   * Counts the values of `chunk` from `start` (just after a comma), at most a
   * window of it; returns the bytes taken (up to just after the last comma).
   */
  skip(chunk: Buffer, start: number): number {
    const len = this.#load(chunk, start);
    const taken = this.#exports.skip(0, len);
    this.count = this.#exports.count.value;
    return taken;
  }

  /**
   * {@link skip}, with the values parsed into `batch[at, NUMBERS_BATCH)`. The
   * window is cut to what the batch's room takes at ~5 bytes a value (node
   * values average under 4): a full window would be copied to parse a quarter
   * of it.
   */
  parse(chunk: Buffer, start: number, at: number): number {
    const len = this.#load(chunk, start, Math.min(NUMBERS_WINDOW, (NUMBERS_BATCH - at) * PARSE_BYTES_PER_VALUE));
    const taken = this.#exports.parse(0, len, OUT + at * 8, NUMBERS_BATCH - at);
    this.count = this.#exports.count.value;
    return taken;
  }

  /** For the next scanner: call once, and use neither the kernel nor its batch afterwards. */
  release(): void {
    if (spare.length < SPARE_KERNELS) spare.push(this);
  }

  #load(chunk: Buffer, start: number, window = NUMBERS_WINDOW): number {
    const end = Math.min(chunk.length, start + window);
    this.#input.set(chunk.subarray(start, end));
    return end - start;
  }
}
