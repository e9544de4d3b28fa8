// docs/architecture.md's folder map is the tree: every workspace package and
// service (a folder with a package.json under packages/ or services/) has its
// row in the "Packages and services" table, and the table names no folder that
// is gone. Run by `npm run check`.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');
const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
const section = doc.split('## Packages and services')[1]?.split('\n## ')[0] ?? '';
const inDocs = new Set([...section.matchAll(/^\| `((?:packages|services)\/[a-z0-9-]+)` \|/gm)].map((m) => m[1]));
const inTree = new Set(
  ['packages', 'services'].flatMap((area) =>
    readdirSync(join(ROOT, area))
      .filter((name) => existsSync(join(ROOT, area, name, 'package.json')))
      .map((name) => `${area}/${name}`),
  ),
);
const missing = [...inTree].filter((f) => !inDocs.has(f));
const stale = [...inDocs].filter((f) => !inTree.has(f));
if (missing.length > 0 || stale.length > 0) {
  if (missing.length > 0) console.error(`docs/architecture.md: no row for ${missing.join(', ')} (add one to "Packages and services")`);
  if (stale.length > 0) console.error(`docs/architecture.md: rows for folders that do not exist: ${stale.join(', ')}`);
  process.exit(1);
}
console.log(`docs map ok: ${inTree.size} packages and services, each with its row`);
