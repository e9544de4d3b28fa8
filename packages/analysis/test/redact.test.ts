/**
 * Redaction of string values (issue 27) on snapshots V8 wrote itself: a
 * target with 24 planted secrets of different shapes. The redacted bytes hold
 * none of them (the original holds all), are valid JSON with the same nodes,
 * edges and names, and are the same whatever the chunking; summary, analysis
 * (top-20 retained sizes) and memlab's node and edge counts are identical.
 * A small hand-written snapshot is cut in two at every byte (escapes, quotes,
 * a backslash at a chunk's end).
 */
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import memlab from '@memlab/core';
import { fixturePath, runHeapcapHere, startSecretsTarget, tmpDir, tokensIn, type NodeTarget, type TmpDir } from '@heapcap/testkit';
import { isCaptureError } from '@heapcap/errors';
import { analyzeSnapshotFile, elementNameWithoutValues, REDACTED_MARKER, SnapshotRedactor, summarizeFile, type RedactionReport } from '../src/index.ts';
import { memlabReference } from './memlab-reference.ts';
import { random, splitAt, writeSnapshot } from './helpers.ts';

function redact(chunks: Buffer[]): { bytes: Buffer; report: RedactionReport } {
  const r = new SnapshotRedactor();
  const out: Buffer[] = [];
  for (const c of chunks) r.write(c, (b) => out.push(Buffer.from(b)));
  const report = r.end();
  return { bytes: Buffer.concat(out), report };
}

interface Snap {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** Every file under `dir`, recursively. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

/** The manifest fields this test reads. */
interface CapturedManifest {
  artifact: { location: string; sha256: string };
  transport: { used: string };
  redaction: { mode: string; redactedStrings?: number };
  summary: { nodeCount: number };
}

async function memlabCounts(file: string): Promise<{ nodes: number; edges: number }> {
  const heap = await memlab.utils.getSnapshotFromFile(file, { buildNodeIdIndex: false });
  return { nodes: heap.nodes.length, edges: heap.edges.length };
}

void describe('redaction of string values', { timeout: 600_000 }, () => {
  let work: TmpDir;
  let target: NodeTarget;
  let tokens: string[];
  let original: Buffer;
  let originalFile: string;
  before(async () => {
    work = await tmpDir('heapcap-redact');
    ({ target, tokens } = await startSecretsTarget());
    originalFile = await writeSnapshot(target, join(work.path, 'original.heapsnapshot'));
    original = await readFile(originalFile);
  });
  after(async () => {
    await target?.kill();
    await work?.cleanup();
  });

  void test('the original holds every planted secret, the redacted bytes none; nodes, edges and names are unchanged', () => {
    assert.ok(tokens.length >= 20, `${tokens.length} secrets planted`);
    assert.deepEqual(tokensIn(original, tokens), tokens, 'without redaction every secret is in the snapshot');
    const { bytes, report } = redact([original]);
    assert.deepEqual(tokensIn(bytes, tokens), [], 'no secret survives redaction');
    const before = JSON.parse(original.toString('utf8')) as Snap;
    const after = JSON.parse(bytes.toString('utf8')) as Snap;
    assert.deepEqual(after.snapshot, before.snapshot);
    assert.deepEqual(after.nodes, before.nodes, 'the nodes array is byte for byte the same');
    assert.deepEqual(after.edges, before.edges);
    assert.equal(after.strings.length, before.strings.length);
    // Every name a node (not a string) or an edge uses is kept; every other entry is the marker or kept because a name uses it.
    const meta = before.snapshot.meta;
    const nodeTypes = meta.node_types[0];
    const edgeTypes = meta.edge_types[0];
    const names = new Set<number>();
    for (let i = 0; i < before.nodes.length; i += meta.node_fields.length) {
      const type = nodeTypes[before.nodes[i + meta.node_fields.indexOf('type')] as number] as string;
      if (!['string', 'concatenated string', 'sliced string'].includes(type)) names.add(before.nodes[i + meta.node_fields.indexOf('name')] as number);
    }
    for (let i = 0; i < before.edges.length; i += meta.edge_fields.length) {
      const type = edgeTypes[before.edges[i + meta.edge_fields.indexOf('type')] as number] as string;
      if (type !== 'element' && type !== 'hidden') names.add(before.edges[i + meta.edge_fields.indexOf('name_or_index')] as number);
    }
    let replaced = 0;
    for (let i = 0; i < before.strings.length; i++) {
      if (names.has(i)) assert.equal(after.strings[i], before.strings[i], `name ${i} kept`);
      else {
        assert.equal(after.strings[i], JSON.parse(REDACTED_MARKER) as string, `string ${i} replaced`);
        replaced++;
      }
    }
    assert.equal(report.redactedStrings, replaced);
    assert.equal(report.keptStrings, before.strings.length - replaced);
    assert.ok(after.strings.includes('Account') && after.strings.includes('password'), 'class and property names stay');
  });

  void test('script names (source URLs) and function names stay; the script source goes', () => {
    // V8 names a Script's node (type `code`) after the script's name, and each
    // function's nodes after the function: the same table entries as the URL
    // and name texts, so they are names and kept. The source (which holds the
    // string literals) is a `string` node's value and is replaced.
    const script = fixturePath('secrets-target.cjs');
    const source = "function token(prefix, digitsOnly = false)";
    for (const text of [script, 'node:internal/modules/cjs/loader', source]) assert.ok(original.includes(text), `the original has ${text}`);
    const { bytes } = redact([original]);
    const after = JSON.parse(bytes.toString('utf8')) as Snap;
    assert.ok(after.strings.includes(script), "the target's script URL is kept");
    assert.ok(after.strings.includes('node:internal/modules/cjs/loader'), "Node's own script URLs are kept");
    assert.ok(after.strings.includes('token'), "the target's function name is kept");
    assert.ok(!bytes.includes(source), "the script's source is replaced");
    assert.deepEqual(tokensIn(bytes, tokens), []);
  });

  for (const node of ['system', '22'] as const) {
    void test(`Node ${node}: a Symbol() description and an eval's sourceURL name are replaced; a Symbol.toStringTag value stays as a class name (documented)`, async () => {
      // docs/operations.md's table says this, per runtime (issue 41): what the tests show.
      const planted = await startSecretsTarget({ node });
      try {
        const file = await writeSnapshot(planted.target, join(work.path, `runtime-${node}.heapsnapshot`));
        const bytes = await readFile(file);
        const special = planted.tokens.filter((t) => t.startsWith('symboldesc') || t.startsWith('sourceurl'));
        assert.equal(special.length, 2);
        assert.deepEqual(tokensIn(bytes, special), special, 'the original holds both');
        const redacted = redact([bytes]).bytes;
        assert.deepEqual(tokensIn(redacted, planted.tokens), [], 'every planted secret replaced, these two included');
        // A toStringTag value is the object's class name (V8 asks the tag before the constructor): a name, kept.
        const tag = planted.kept['tostringtag'] as string;
        assert.ok(tag.startsWith('tostringtag'));
        const redactedFile = join(work.path, `runtime-${node}-redacted.heapsnapshot`);
        await writeFile(redactedFile, redacted);
        const summary = await summarizeFile(redactedFile);
        assert.ok(summary.classes.some((c) => c.name === tag), 'kept: the tag is a class of the redacted summary');
      } finally {
        await planted.target.kill();
      }
    });
  }

  void test('the same bytes whatever the chunking', () => {
    const whole = redact([original]).bytes;
    for (const seed of [1, 2, 3, 4]) {
      const rnd = random(seed);
      const cuts = Array.from({ length: 400 }, () => Math.floor(rnd() * original.length));
      // Cuts right after backslashes and quotes of the strings table too: escapes split between chunks.
      const table = original.indexOf('"strings":[');
      for (let i = 0; i < 200; i++) {
        const at = original.indexOf(i % 2 === 0 ? '\\' : '"', table + Math.floor(rnd() * (original.length - table)));
        if (at > 0) cuts.push(at, at + 1);
      }
      assert.ok(redact(splitAt(original, cuts)).bytes.equals(whole), `seed ${seed}`);
    }
  });

  void test('summary, top-20 retained sizes and memlab node and edge counts are identical', async () => {
    const redactedFile = join(work.path, 'redacted.heapsnapshot');
    await writeFile(redactedFile, redact([original]).bytes);
    // The same summary, but for the file's size (the table's text is shorter).
    const [sa, sb] = [await summarizeFile(originalFile), await summarizeFile(redactedFile)];
    assert.ok(sb.snapshotBytes < sa.snapshotBytes);
    assert.deepEqual({ ...sb, snapshotBytes: 0 }, { ...sa, snapshotBytes: 0 });
    const [a, b] = await Promise.all([analyzeSnapshotFile(originalFile, { maxBytes: 1e9 }), analyzeSnapshotFile(redactedFile, { maxBytes: 1e9 })]);
    assert.deepEqual(b.classes.slice(0, 20), a.classes.slice(0, 20));
    assert.deepEqual(
      b.dominators.map((d) => [d.id, d.class, d.retainedSize]),
      a.dominators.map((d) => [d.id, d.class, d.retainedSize]),
    );
    assert.deepEqual(await memlabCounts(redactedFile), await memlabCounts(originalFile));
    const [ra, rb] = [await memlabReference(originalFile), await memlabReference(redactedFile)];
    assert.deepEqual(rb.classes, ra.classes, 'memlab: the same classes, counts, self and retained sizes');
  });

  for (const transport of ['cdp', 'pipe'] as const) {
    void test(`heapcap capture --redact strings over ${transport}: no secret in the stored artifact (gunzipped) or any file it wrote; without it, all`, async () => {
      const dir = join(work.path, `capture-${transport}`);
      const [out, spill, tmp, pipes] = ['out', 'spill', 'tmp', 'pipes'].map((d) => join(dir, d)) as [string, string, string, string];
      for (const d of [out, spill, tmp, pipes]) await mkdir(d, { recursive: true });
      const capture = async (redact: string[], sub: string): Promise<{ manifest: CapturedManifest; artifact: Buffer }> => {
        // A 1 MiB memory ceiling: the spill file is used; TMPDIR too is under the test's eyes.
        const args = ['capture', '--node', `127.0.0.1:${target.port}`, '--out', join(out, sub), '--transport', transport, '--pipe-dir', pipes, '--memory-ceiling', '1', '--spill-dir', spill, '--json', ...redact];
        const res = await runHeapcapHere(args, { timeoutMs: 300_000, env: { TMPDIR: tmp } });
        assert.equal(res.code, 0, res.stderr);
        const manifest = JSON.parse(res.stdout) as CapturedManifest;
        assert.equal(manifest.transport.used, transport);
        return { manifest, artifact: gunzipSync(await readFile(manifest.artifact.location)) };
      };
      const redacted = await capture(['--redact', 'strings'], 'redacted');
      assert.equal(redacted.manifest.redaction.mode, 'strings');
      assert.ok((redacted.manifest.redaction.redactedStrings ?? 0) > 1000);
      assert.deepEqual(tokensIn(redacted.artifact, tokens), [], 'no secret in the stored artifact');
      for (const file of await filesUnder(dir)) {
        const bytes = await readFile(file);
        assert.deepEqual(tokensIn(bytes, tokens), [], `no secret in ${file}`);
        if (file.endsWith('.gz')) assert.deepEqual(tokensIn(gunzipSync(bytes), tokens), [], `no secret in ${file} gunzipped`);
      }
      // memlab opens it, with the node count our summary counted; edges as the header says.
      const redactedFile = join(dir, 'redacted.heapsnapshot');
      await writeFile(redactedFile, redacted.artifact);
      const counts = await memlabCounts(redactedFile);
      assert.equal(counts.nodes, redacted.manifest.summary.nodeCount);

      const clear = await capture([], 'clear');
      assert.equal(clear.manifest.redaction.mode, 'none');
      assert.deepEqual(tokensIn(clear.artifact, tokens), tokens, 'without redaction every secret is stored');
    });
  }

  void test('a hand-written table cut in two at every byte: escapes, a backslash at a chunk end, names kept', () => {
    const meta = {
      node_fields: ['type', 'name', 'id', 'self_size', 'edge_count'],
      node_types: [['hidden', 'string', 'object', 'concatenated string'], 'string', 'number', 'number', 'number'],
      edge_fields: ['type', 'name_or_index', 'to_node'],
      edge_types: [['element', 'property', 'hidden'], 'string_or_number', 'node'],
    };
    // Node 0 hidden "root" (name 0) with 3 edges: property "k\"ey" (1) → string node (value 2),
    // element 3 → string node (value 3), hidden 4 → object "Obj" (4); a cons string (value 5).
    const strings = ['root', 'k"ey', 'se\\cr"et\\', 'tok\\\\', 'Obj', 'x\u00e9\ud83d\udd11y'];
    const text =
      `{"snapshot":{"meta":${JSON.stringify(meta)},"node_count":5,"edge_count":3},\n"nodes":[0,0,1,8,3\n,1,2,2,16,0\n,1,3,3,16,0\n,2,4,4,24,0\n,3,5,5,32,0],\n"edges":[1,1,5\n,0,3,10\n,2,4,15],\n` +
      `"locations":[],\n"strings":[${strings.map((s) => JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)).join(',\n')}]}\n`;
    const bytes = Buffer.from(text);
    const expected = JSON.parse(text) as Snap;
    expected.strings = ['root', 'k"ey', '<redacted>', '<redacted>', 'Obj', '<redacted>'];
    const whole = redact([bytes]);
    assert.deepEqual(JSON.parse(whole.bytes.toString()), expected);
    assert.deepEqual({ redacted: whole.report.redactedStrings, kept: whole.report.keptStrings }, { redacted: 3, kept: 3 });
    for (let cut = 1; cut < bytes.length; cut++) {
      assert.ok(redact(splitAt(bytes, [cut])).bytes.equals(whole.bytes), `cut at ${cut}`);
    }
    // Truncated inside the table: refused, nothing to store.
    const r = new SnapshotRedactor();
    r.write(bytes.subarray(0, bytes.length - 20), () => undefined);
    assert.throws(() => r.end(), (err: unknown) => isCaptureError(err) && err.code === 'snapshot_invalid');
  });

  void test('native (DOM) names keep the tag and the attribute names, whatever the chunking; other names stay whole', () => {
    // Chromium 156 names element nodes with the opening tag, values included (issue 41).
    const meta = {
      node_fields: ['type', 'name', 'id', 'self_size', 'edge_count', 'detachedness'],
      node_types: [['hidden', 'string', 'object', 'native'], 'string', 'number', 'number', 'number', 'number'],
      edge_fields: ['type', 'name_or_index', 'to_node'],
      edge_types: [['element', 'property', 'hidden'], 'string_or_number', 'node'],
    };
    const strings = ['root', '<input id="in1" value="se\\cr\u00e9t>1">', '<div id="a1" class="c2" data-token="t3" title="tö4" hidden>', 'HTMLDocument', '<span id="d5">', '<p>', 'Obj', 'v'];
    const text =
      `{"snapshot":{"meta":${JSON.stringify(meta)},"node_count":8,"edge_count":0},\n"nodes":[0,0,1,8,0,0\n,3,1,2,16,0,1\n,3,2,3,16,0,1\n,3,3,4,16,0,1\n,3,4,5,16,0,2\n,3,5,6,16,0,1\n,2,6,7,24,0,0\n,1,7,8,16,0,0],\n"edges":[],\n` +
      `"locations":[],\n"strings":[${strings.map((x) => JSON.stringify(x).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)).join(',\n')}]}\n`;
    const bytes = Buffer.from(text);
    const whole = redact([bytes]);
    const after = JSON.parse(whole.bytes.toString()) as Snap;
    assert.deepEqual(after.strings, ['root', '<input id value>', '<div id class data-token title hidden>', 'HTMLDocument', '<span id>', '<p>', 'Obj', '<redacted>']);
    assert.equal(whole.report.rewrittenNames, 3);
    for (let cut = 1; cut < bytes.length; cut++) {
      assert.ok(redact(splitAt(bytes, [cut])).bytes.equals(whole.bytes), `cut at ${cut}`);
    }
  });

  void test('an element name that does not parse as tag and attributes keeps only the tag', () => {
    assert.equal(elementNameWithoutValues('<input id="in1" value="x">'), '<input id value>');
    assert.equal(elementNameWithoutValues('Detached <div id="x">'), 'Detached <div id>');
    assert.equal(elementNameWithoutValues('<div title="a"b="secret">'), '<div>', 'a quote inside a value');
    assert.equal(elementNameWithoutValues("<div title='secret'>"), '<div>', 'single quotes');
    assert.equal(elementNameWithoutValues('<div>'), '<div>');
    assert.equal(elementNameWithoutValues('HTMLDivElement'), 'HTMLDivElement');
    assert.equal(elementNameWithoutValues('<div id="x"'), '<div id="x"', 'not a whole tag: not an element name');
  });
});
