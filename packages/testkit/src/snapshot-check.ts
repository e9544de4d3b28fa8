/** Checks of what a successful capture wrote: snapshot, manifest, timings (the CLI's, the service's, the README's). */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import type { CaptureManifest } from '@heapcap/storage';

/** The parts of a V8 heap snapshot the tests read. */
export interface HeapSnapshotJson {
  snapshot: {
    meta: { node_fields: string[]; node_types: [string[], ...unknown[]]; edge_fields: string[] };
    node_count: number;
    edge_count: number;
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** The artifact as stored, decompressed, hashed and parsed. */
export interface LoadedArtifact {
  bytes: number;
  sha256: string;
  snapshot: HeapSnapshotJson;
}

/** Reads the artifact the manifest points to (gunzipping when stored gzipped). */
export async function loadArtifact(manifest: CaptureManifest): Promise<LoadedArtifact> {
  const stored = await readFile(manifest.artifact.location);
  assert.equal(stored.length, manifest.artifact.bytesStored, 'bytesStored');
  const raw = manifest.artifact.gzip ? gunzipSync(stored) : stored;
  const sha256 = createHash('sha256').update(raw).digest('hex');
  return { bytes: raw.length, sha256, snapshot: JSON.parse(raw.toString('utf8')) as HeapSnapshotJson };
}

/** The flat arrays have exactly count × fields entries (a truncated or spliced snapshot does not). */
export function assertSnapshotShape(s: HeapSnapshotJson): void {
  const { meta, node_count: nodeCount, edge_count: edgeCount } = s.snapshot;
  assert.ok(nodeCount > 0, 'node_count');
  assert.equal(s.nodes.length, nodeCount * meta.node_fields.length, 'nodes.length == node_count × node_fields.length');
  assert.equal(s.edges.length, edgeCount * meta.edge_fields.length, 'edges.length == edge_count × edge_fields.length');
}

/** Number of `object` nodes whose name (constructor) is `name`. */
export function countObjects(s: HeapSnapshotJson, name: string): number {
  const { node_fields: fields, node_types: types } = s.snapshot.meta;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const objectType = types[0].indexOf('object');
  let n = 0;
  for (let i = 0; i < s.nodes.length; i += fields.length) {
    if (s.nodes[i + typeAt] === objectType && s.strings[s.nodes[i + nameAt] ?? -1] === name) n++;
  }
  return n;
}

/**
 * Phases are contiguous on one monotonic clock, so every phase of the manifest
 * adds up to the total; each value is rounded on its own, hence 1 ms of slack
 * per phase.
 */
export function assertTimingsAddUp(timings: CaptureManifest['timings']): void {
  const phases = Object.entries(timings).filter(([name]) => name !== 'total');
  assert.ok(phases.length >= 7, `phases: ${JSON.stringify(timings)}`);
  for (const [phase, ms] of phases) {
    assert.equal(typeof ms, 'number', `timings.${phase}`);
    assert.ok(ms >= 0, `timings.${phase} = ${ms}`);
  }
  assert.ok(timings.generate > 0 && timings.serialize > 0, `generate and serialize take time: ${JSON.stringify(timings)}`);
  const sum = phases.reduce((acc, [, ms]) => acc + ms, 0);
  assert.ok(Math.abs(sum - timings.total) <= phases.length, `phases sum to ${sum} ms, total is ${timings.total} ms`);
}

/** Parses `--json` stdout and checks it equals the `.manifest.json` written beside the snapshot. */
export async function readManifests(stdout: string): Promise<CaptureManifest> {
  const printed = JSON.parse(stdout) as CaptureManifest;
  // @heapcap/storage loads here, not in every test file that imports the test kit.
  const { siblingOf } = await import('@heapcap/storage');
  const file = siblingOf(printed.artifact.location, 'manifest');
  assert.notEqual(file, printed.artifact.location);
  const written = JSON.parse(await readFile(file, 'utf8')) as unknown;
  assert.deepEqual(written, printed, '--json output == .manifest.json');
  return printed;
}

/** Everything a good artifact must satisfy; returns the parsed snapshot for target-specific checks. */
export async function assertGoodArtifact(manifest: CaptureManifest): Promise<HeapSnapshotJson> {
  const artifact = await loadArtifact(manifest);
  assertSnapshotShape(artifact.snapshot);
  assert.equal(artifact.sha256, manifest.artifact.sha256, 'sha256 of the decompressed bytes');
  assert.equal(artifact.bytes, manifest.artifact.bytesUncompressed, 'bytesUncompressed');
  assert.equal(manifest.snapshot?.nodeCount, artifact.snapshot.snapshot.node_count, 'manifest node count');
  assert.equal(manifest.snapshot?.edgeCount, artifact.snapshot.snapshot.edge_count, 'manifest edge count');
  assertTimingsAddUp(manifest.timings);
  return artifact.snapshot;
}
