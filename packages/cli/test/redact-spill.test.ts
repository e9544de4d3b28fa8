/**
 * Redaction runs before the spill buffer (issue 27): a snapshot of the secrets
 * target through the engine's `takeSnapshot` with a 4 KiB memory ceiling and a
 * consumer that reads nothing until the snapshot is complete, so nearly all of
 * it goes to the spill file. The spill file is unlinked when opened; it is
 * read through this process's open descriptor (/proc/self/fd) while the
 * stream still holds it. With the redactor: no secret in it; without: the
 * secrets are there. The consumer's bytes are the redactor's output.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { CdpSession, takeSnapshot } from '@heapcap/capture';
import { SnapshotRedactor } from '@heapcap/analysis';
import { startSecretsTarget, tmpDir, tokensIn, type NodeTarget, type TmpDir } from '@heapcap/testkit';

/** The content of the spill file this process holds open in `dir` (unlinked, so only reachable through its fd). */
async function openSpillFile(dir: string): Promise<Buffer> {
  for (const fd of await readdir('/proc/self/fd')) {
    const link = await readlink(`/proc/self/fd/${fd}`).catch(() => '');
    if (link.startsWith(`${dir}/heapcap-spill-`)) return readFile(`/proc/self/fd/${fd}`);
  }
  throw new Error(`no open spill file in ${dir}`);
}

void describe('redaction before the spill file', { timeout: 300_000 }, () => {
  let work: TmpDir;
  let target: NodeTarget;
  let tokens: string[];
  let session: CdpSession;
  before(async () => {
    work = await tmpDir('heapcap-redact-spill');
    ({ target, tokens } = await startSecretsTarget());
    session = await CdpSession.connect(target.wsUrl as string, { connectTimeoutMs: 10_000, commandTimeoutMs: 60_000 });
    await session.send('HeapProfiler.enable');
  });
  after(async () => {
    await session?.close();
    await target?.kill();
    await work?.cleanup();
  });

  async function snapshot(redactor: SnapshotRedactor | undefined): Promise<{ spill: Buffer; bytes: Buffer; spilled: number }> {
    const spillDir = work.path;
    let complete = (): void => undefined;
    const completed = new Promise<void>((resolve) => (complete = resolve));
    const taken = await takeSnapshot(
      session,
      async (stream) => {
        await completed;
        const spill = await openSpillFile(spillDir);
        const chunks: Buffer[] = [];
        for await (const c of stream) chunks.push(Buffer.from(c as Buffer));
        return { spill, bytes: Buffer.concat(chunks) };
      },
      { memoryCeilingBytes: 4096, spillDir, transform: redactor, onComplete: () => complete() },
    );
    return { ...taken.consumed, spilled: taken.stats.spilledBytes };
  }

  void test('with the redactor no secret reaches the spill file; without it they do', async () => {
    const clear = await snapshot(undefined);
    assert.ok(clear.spill.length > 1_000_000, `${clear.spill.length} bytes spilled`);
    // The last staged block (≤ 4 KiB) is written only when read: nearly every token is in the file.
    assert.ok(tokensIn(clear.spill, tokens).length >= tokens.length - 2, `without redaction the spill file holds the secrets (${tokensIn(clear.spill, tokens).length} of ${tokens.length})`);
    assert.deepEqual(tokensIn(clear.bytes, tokens), tokens);

    const redactor = new SnapshotRedactor();
    const redacted = await snapshot(redactor);
    assert.ok(redacted.spill.length > 1_000_000, `${redacted.spill.length} bytes spilled`);
    assert.deepEqual(tokensIn(redacted.spill, tokens), [], 'no secret in the spill file');
    assert.deepEqual(tokensIn(redacted.bytes, tokens), [], 'no secret in what the consumer read');
    assert.ok(redactor.redaction.redactedStrings > 1000);
    JSON.parse(redacted.bytes.toString('utf8'));
  });
});
