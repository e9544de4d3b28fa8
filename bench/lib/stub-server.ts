/**
 * The stub inspector (packages/testkit/src/stub-inspector.ts) in its own
 * process, so its CPU is measured apart from the bench's and the workers':
 *
 *   node --import tsx bench/lib/stub-server.ts [OBJECTS] [GENERATE_MS]
 *
 * Prints `{"port":N,"pid":N}` once listening; `GET /stats` answers its
 * counters; SIGTERM closes it.
 */
import { startStubInspector } from '@heapcap/testkit';

const stub = await startStubInspector({ objects: Number(process.argv[2] ?? 100), generateMs: Number(process.argv[3] ?? 0) });
process.stdout.write(`${JSON.stringify({ port: stub.port, pid: process.pid, snapshotBytes: stub.snapshot.length })}\n`);
process.once('SIGTERM', () => void stub.close().then(() => process.exit(0)));
