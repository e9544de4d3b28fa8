/**
 * A WebAssembly text file assembled (wabt's wat2wasm, SIMD on): the one
 * assembler of the embedded modules (packages/capture's unescape.wat,
 * packages/analysis's numbers.wat), used by scripts/assemble-wasm.mjs, which
 * generates them (through the `@heapcap/testkit/wat` subpath, without the rest
 * of the kit), and by the tests that check an embedded module is its source.
 */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';

interface Wabt {
  parseWat(name: string, text: string, features: object): { validate(): void; toBinary(o: object): { buffer: Uint8Array } };
}

/** The module `wat` (a file URL or path) assembles to, validated. */
export async function assembleWat(wat: URL | string): Promise<Buffer> {
  const path = wat instanceof URL ? fileURLToPath(wat) : wat;
  const { default: init } = (await import('wabt')) as unknown as { default: () => Promise<Wabt> };
  const wabt = await init();
  const module = wabt.parseWat(basename(path), await readFile(path, 'utf8'), { simd: true });
  module.validate();
  return Buffer.from(module.toBinary({}).buffer);
}
