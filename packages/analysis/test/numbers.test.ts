/**
 * The integer arrays' WebAssembly fast path (numbers.wat): the scanner gives
 * the same values, counts and errors with it as without it. Without it means
 * 1-byte chunks: the kernel only runs with 64 bytes or more left in a chunk,
 * so those take the JavaScript loops alone.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isCaptureError } from '@heapcap/errors';
import { assembleWat } from '@heapcap/testkit';
import { NUMBERS_WASM } from '../src/numbers-wasm.ts';
import { SnapshotScanner, type NumberSection } from '../src/scanner.ts';
import { random } from './helpers.ts';

interface Scanned {
  nodes: number[];
  edges: number[];
  totals: { nodeValues: number; edgeValues: number };
}

/** Scans `chunks`; the values of the sections in `wanted` are kept, the others only counted. */
function scan(chunks: Buffer[], wanted: NumberSection[]): Scanned {
  const out: Scanned = { nodes: [], edges: [], totals: { nodeValues: 0, edgeValues: 0 } };
  const scanner = new SnapshotScanner({
    header: () => undefined,
    wants: (section) => wanted.includes(section),
    numbers: (section, values, count) => {
      for (let k = 0; k < count; k++) out[section].push(values[k] as number);
    },
    nextWantedString: () => Infinity,
    string: () => undefined,
  });
  for (const c of chunks) scanner.write(c);
  const totals = scanner.end();
  out.totals = { nodeValues: totals.nodeValues, edgeValues: totals.edgeValues };
  return out;
}

const bytesOf = (b: Buffer): Buffer[] => Array.from({ length: b.length }, (_, i) => b.subarray(i, i + 1));

/** Values of 1 to `maxDigits` digits (more of the short ones, as in a snapshot), in V8's layout: `\n,` after every `perLine`. */
function numbersText(next: () => number, count: number, perLine: number, maxDigits: number): string {
  let text = '';
  for (let k = 0; k < count; k++) {
    const digits = 1 + Math.floor(next() ** 3 * maxDigits);
    let v = String(1 + Math.floor(next() * 9));
    while (v.length < digits) v += String(Math.floor(next() * 10));
    if (k > 0) text += k % perLine === 0 ? '\n,' : ',';
    text += v;
  }
  return text;
}

function document(nodes: string, edges: string): Buffer {
  return Buffer.from(`{"snapshot":{},\n"nodes":[${nodes}],\n"edges":[${edges}],\n"strings":["a"]}`, 'latin1');
}

void describe('integer arrays in WebAssembly', () => {
  void test('the module is numbers.wat, assembled', async () => {
    assert.deepEqual(await assembleWat(new URL('../src/numbers.wat', import.meta.url)), Buffer.from(NUMBERS_WASM), 'numbers-wasm.ts is stale: run node scripts/assemble-wasm.mjs');
  });

  void test('values of 1-20 digits, parsed or counted: as the JavaScript loops give them, whatever the chunking', () => {
    const next = random(11);
    // Long enough for several kernel windows (256 KiB) and batches (16,384 values); 16+ digits are the loops' alone.
    const nodes = numbersText(next, 120_000, 7, 20);
    const edges = numbersText(next, 150_000, 3, 12);
    const doc = document(nodes, edges);
    const expected = {
      nodes: nodes.split(/\n?,/).map((v) => [...v].reduce((a, d) => a * 10 + Number(d), 0)),
      edges: edges.split(/\n?,/).map(Number),
    };
    for (const wanted of [['nodes'], ['nodes', 'edges'], []] as NumberSection[][]) {
      const chunkings: [string, Buffer[]][] = [['one buffer', [doc]]];
      for (const seed of [1, 2, 3]) {
        const r = random(seed);
        const chunks: Buffer[] = [];
        for (let at = 0; at < doc.length; ) {
          const size = 1 + Math.floor(r() * 200_000);
          chunks.push(doc.subarray(at, at + size));
          at += size;
        }
        chunkings.push([`random chunks (seed ${seed})`, chunks]);
      }
      for (const [how, chunks] of chunkings) {
        const got = scan(chunks, wanted);
        assert.equal(got.totals.nodeValues, expected.nodes.length, `${how}: node count`);
        assert.equal(got.totals.edgeValues, expected.edges.length, `${how}: edge count`);
        assert.deepEqual(got.nodes, wanted.includes('nodes') ? expected.nodes : [], `${how}: nodes`);
        assert.deepEqual(got.edges, wanted.includes('edges') ? expected.edges : [], `${how}: edges`);
      }
    }
    // The loops alone (1-byte chunks) on a smaller document: the same as the kernel on it.
    const small = document(numbersText(next, 3000, 7, 20), numbersText(next, 3000, 3, 20));
    assert.deepEqual(scan(bytesOf(small), ['nodes', 'edges']), scan([small], ['nodes', 'edges']));
    assert.deepEqual(scan(bytesOf(small), []), scan([small], []));
  });

  void test('scanners side by side never share a batch; instances given back serve the next scanners', () => {
    const next = random(3);
    const docs = [1, 2, 3].map((k) => document(numbersText(next, 20_000 * k, 7, 12), numbersText(next, 10_000, 3, 12)));
    const alone = docs.map((d) => scan([d], ['nodes', 'edges']));
    for (let round = 0; round < 3; round++) {
      // Interleaved 4 KiB chunks: each scanner's batch is in its own instance's memory.
      const outs = docs.map(() => ({ nodes: [] as number[], edges: [] as number[] }));
      const scanners = docs.map(
        (_, k) =>
          new SnapshotScanner({
            header: () => undefined,
            wants: () => true,
            numbers: (section, values, count) => {
              for (let j = 0; j < count; j++) outs[k]?.[section].push(values[j] as number);
            },
            nextWantedString: () => Infinity,
            string: () => undefined,
          }),
      );
      for (let at = 0; docs.some((d) => at < d.length); at += 4096) {
        docs.forEach((d, k) => {
          if (at < d.length) scanners[k]?.write(d.subarray(at, at + 4096));
        });
      }
      scanners.forEach((sc) => sc.end());
      outs.forEach((o, k) => {
        assert.deepEqual(o.nodes, alone[k]?.nodes, `round ${round}, scanner ${k}: nodes`);
        assert.deepEqual(o.edges, alone[k]?.edges, `round ${round}, scanner ${k}: edges`);
      });
    }
  });

  void test('a bad byte at each of 48 places, counted or parsed: snapshot_invalid at that byte, as without the kernel', () => {
    const next = random(5);
    const values = numbersText(next, 400, 7, 9);
    const doc = document(values, values);
    const text = doc.toString('latin1');
    const sections = { nodes: text.indexOf('"nodes":[') + 9, edges: text.indexOf('"edges":[') + 9 };
    for (const [section, start] of Object.entries(sections)) {
      // Every offset across three of the kernel's 16-byte blocks, well inside the array.
      for (let k = 0; k < 48; k++) {
        const pos = start + 500 + k;
        for (const [what, byte] of [
          ['a letter', 0x78],
          ['a second comma', 0x2c],
          ['a newline', 0x0a],
          ['a space', 0x20],
        ] as const) {
          if (doc[pos] === byte) continue;
          const bad = Buffer.from(doc);
          bad[pos] = byte;
          for (const wanted of [[section], []] as NumberSection[][]) {
            let kernel: unknown;
            let loops: unknown;
            try {
              scan([bad], wanted);
            } catch (err) {
              kernel = err;
            }
            try {
              scan(bytesOf(bad.subarray(0, start + 600)).concat(bad.subarray(start + 600)), wanted);
            } catch (err) {
              loops = err;
            }
            const where = `${what} at ${section}+${pos - start} (${wanted.length > 0 ? 'parsed' : 'counted'})`;
            if (loops === undefined) {
              // Some replacements keep the array valid (a newline after a digit before a comma, a space anywhere between values).
              assert.equal(kernel, undefined, where);
              assert.deepEqual(scan([bad], wanted), scan(bytesOf(bad), wanted), where);
              continue;
            }
            assert.ok(isCaptureError(kernel, 'snapshot_invalid'), `${where}: ${String(kernel)}`);
            assert.ok(isCaptureError(loops, 'snapshot_invalid'));
            assert.equal(kernel.details?.offset, loops.details?.offset, where);
            assert.equal(kernel.message, loops.message, where);
          }
        }
      }
    }
  });
});
