// TypeScript (strict) and ESLint (type-aware) over the same programs: one per
// tsconfig (the Node one, and the console's with the DOM). Run apart, `tsc`
// built and checked the program (~35 CPU-s) and ESLint's project service built
// and checked it again (~75 CPU-s, most of it in the type checker behind
// no-misused-promises and no-floating-promises); handed tsc's programs, whose
// checker has every type resolved already, ESLint takes ~15 CPU-s.
import ts from 'typescript';
import { ESLint } from 'eslint';

const PROJECTS = ['tsconfig.json', 'services/console/src/tsconfig.json'];
const LINTED = ['packages', 'services', 'bench', 'scripts', 'eslint.config.mjs'];

/** The program `tsc -p configPath` would build. */
function program(configPath) {
  const host = { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); } };
  const parsed = ts.getParsedCommandLineOfConfigFile(configPath, {}, host);
  return ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options, projectReferences: parsed.projectReferences, configFileParsingDiagnostics: parsed.errors });
}

let failed = false;
let t0 = Date.now();
const programs = PROJECTS.map(program);
const format = { getCanonicalFileName: (f) => f, getCurrentDirectory: ts.sys.getCurrentDirectory, getNewLine: () => ts.sys.newLine };
for (const [i, p] of programs.entries()) {
  // What `tsc --noEmit` reports: options, global, syntactic and semantic diagnostics.
  const diags = ts.getPreEmitDiagnostics(p);
  if (diags.length > 0) {
    process.stdout.write(ts.formatDiagnosticsWithColorAndContext(diags, format));
    console.error(`check failed: typecheck ${PROJECTS[i]} (${diags.length} error(s))`);
    failed = true;
  }
}
console.log(`check ${failed ? 'FAILED' : 'ok'}: typecheck (${Date.now() - t0} ms)`);

t0 = Date.now();
// Every .ts/.tsx file linted must belong to one of the programs (typescript-eslint fails the file otherwise).
const eslint = new ESLint({ overrideConfig: [{ files: ['**/*.ts', '**/*.mts', '**/*.tsx'], languageOptions: { parserOptions: { projectService: false, programs } } }] });
const results = await eslint.lintFiles(LINTED);
const problems = results.reduce((n, r) => n + r.errorCount + r.warningCount, 0);
// --max-warnings=0: a warning fails the check like an error.
if (problems > 0) {
  process.stdout.write(await (await eslint.loadFormatter('stylish')).format(results));
  console.error(`check failed: lint (${problems} problem(s))`);
  failed = true;
}
console.log(`check ${problems > 0 ? 'FAILED' : 'ok'}: lint, ${results.length} files (${Date.now() - t0} ms)`);
process.exit(failed ? 1 : 0);
