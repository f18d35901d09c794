#!/usr/bin/env node
// `npm run check:docs`: every ```ts block of README.md and docs/*.md (not docs/adr)
// is type-checked as its own module, in one `tsc` run, so the examples are code
// that compiles (imports included). `nestjs-rheo` resolves to lib/index.ts.
//
//   node scripts/check-doc-examples.mjs            README.md and docs/*.md
//   node scripts/check-doc-examples.mjs FILE.md…   only these files
//   --keep                                         leave the generated files (path printed)
//
// The table of consumer options in docs/consumers.md must be the one their
// declaration generates (scripts/consumer-options-table.ts): the first row that
// differs is named.
//
// A block whose first line is `// app.module.ts` (a file name) is written under
// that name, so the other blocks of the same document can import it
// (`import { AppModule } from './app.module'`). A block whose first line is
// `// not-compiled: <reason>` is skipped, and counted as skipped.
import console from 'node:console';
import process from 'node:process';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// Inside the repository so that imports resolve from its node_modules; under
// node_modules so that git, ESLint, Prettier and the project's tsc never see it.
const OUT = join(ROOT, 'node_modules', '.cache', 'check-doc-examples');

const args = process.argv.slice(2);
const keep = args.includes('--keep');
const requested = args.filter((a) => a !== '--keep');

// Documents left out of the default run, with why. Keep this empty: an entry is
// a debt, printed on every run. Naming the file on the command line checks it anyway.
const PENDING = {};

function defaultDocs() {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => join('docs', f));
  return ['README.md', ...docs];
}

const OPEN = /^(\s*)```(ts|typescript)\s*$/;
const CLOSE = /^\s*```\s*$/;
const NOT_COMPILED = /^\/\/\s*not-compiled:(.*)$/;
const FILE_NAME = /^\/\/\s*([\w.-]+\.ts)\s*$/;

/** The ```ts blocks of one Markdown file: { line (1-based, of the first code line), code, name?, skipped? }. */
function blocksOf(doc) {
  const lines = readFileSync(join(ROOT, doc), 'utf8').split('\n');
  const blocks = [];
  const problems = [];
  for (let i = 0; i < lines.length; i++) {
    const open = OPEN.exec(lines[i]);
    if (!open) continue;
    const indent = open[1].length;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !CLOSE.test(lines[end])) end++;
    if (end >= lines.length) {
      problems.push(`${doc}:${i + 1}: the \`\`\`ts block opened here is never closed`);
      break;
    }
    const code = lines.slice(start, end).map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length)));
    const block = { doc, line: start + 1, code };
    const first = code[0] ?? '';
    const skip = NOT_COMPILED.exec(first);
    if (skip) {
      if (!skip[1].trim()) problems.push(`${doc}:${start + 1}: \`// not-compiled:\` needs a reason`);
      block.skipped = skip[1].trim();
    }
    const name = FILE_NAME.exec(first);
    if (name) block.name = name[1];
    blocks.push(block);
    i = end;
  }
  return { blocks, problems };
}

const docs = requested.length ? requested.map((d) => relative(ROOT, resolve(d))) : defaultDocs().filter((d) => !(d in PENDING));
const pending = requested.length ? [] : defaultDocs().filter((d) => d in PENDING);
rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });

/** Generated file (absolute path) -> the block it came from. */
const origin = new Map();
const problems = [];
const counts = [];
for (const doc of docs) {
  if (!existsSync(join(ROOT, doc))) {
    problems.push(`${doc}: no such file`);
    continue;
  }
  const { blocks, problems: found } = blocksOf(doc);
  problems.push(...found);
  const dir = join(OUT, doc.replace(/\.md$/, '').replace(/[\\/]/g, '__'));
  mkdirSync(dir, { recursive: true });
  const names = new Map();
  let checked = 0;
  for (const block of blocks) {
    if (block.skipped !== undefined) continue;
    const name = block.name ?? `block-line-${block.line}.ts`;
    if (names.has(name)) {
      problems.push(`${doc}:${block.line}: a second block named ${name} (the first is at line ${names.get(name)})`);
      continue;
    }
    names.set(name, block.line);
    const file = join(dir, name);
    // `export {}` keeps every block a module (its own scope; top-level await allowed).
    writeFileSync(file, `${block.code.join('\n')}\nexport {};\n`);
    origin.set(file, block);
    checked++;
  }
  counts.push({ doc, checked, skipped: blocks.filter((b) => b.skipped !== undefined) });
}

/** Why the consumer options table differs from CONSUMER_FIELDS, or undefined; the generator is TypeScript, loaded through ts-node. */
function optionsTableProblem() {
  const require = createRequire(import.meta.url);
  require('ts-node').register({ transpileOnly: true });
  const { TABLE_DOC, tableDifference } = require('./consumer-options-table.ts');
  if (!docs.includes(TABLE_DOC)) return undefined;
  const difference = tableDifference(readFileSync(join(ROOT, TABLE_DOC), 'utf8'));
  return difference === undefined ? undefined : `${TABLE_DOC}: ${difference}`;
}
const tableProblem = optionsTableProblem();
if (tableProblem !== undefined) problems.push(tableProblem);

const tsconfig = {
  extends: join(ROOT, 'tsconfig.json'),
  compilerOptions: {
    // ES modules, so top-level await type-checks; bundler resolution, so the
    // extensionless imports of lib/ and of the examples resolve as a Nest build does.
    module: 'es2022',
    moduleResolution: 'bundler',
    target: 'ES2022',
    noEmit: true,
    declaration: false,
    sourceMap: false,
    types: ['node'],
    rootDir: ROOT,
    paths: { 'nestjs-rheo': [join(ROOT, 'lib', 'index.ts')] },
  },
  include: [],
  files: [...origin.keys()],
};
writeFileSync(join(OUT, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));

let tscFailed = false;
const diagnostics = [];
if (origin.size > 0) {
  const tsc = spawnSync(
    process.execPath,
    [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(OUT, 'tsconfig.json'), '--pretty', 'false'],
    {
      cwd: ROOT,
      encoding: 'utf8',
    },
  );
  if (tsc.error) throw tsc.error;
  tscFailed = tsc.status !== 0;
  // `file(line,col): error TS1234: message`, continuation lines indented.
  const LOCATED = /^(.+?)\((\d+),(\d+)\): (error|warning) (TS\d+: .*)$/;
  for (const line of `${tsc.stdout}${tsc.stderr}`.split('\n')) {
    if (!line.trim()) continue;
    const m = LOCATED.exec(line);
    const block = m && origin.get(resolve(ROOT, m[1]));
    if (m && block) {
      const docLine = block.line + Number(m[2]) - 1;
      const source = block.code[Number(m[2]) - 1] ?? '';
      diagnostics.push(`${block.doc}:${docLine}:${m[3]} ${m[5]}\n    ${source.trim()}`);
    } else if (m) {
      diagnostics.push(`${relative(ROOT, resolve(ROOT, m[1]))}:${m[2]}:${m[3]} ${m[5]}`);
    } else {
      diagnostics.push(line);
    }
  }
}

for (const { doc, checked, skipped } of counts) {
  const note = skipped.length ? `, ${skipped.length} not compiled (${skipped.map((b) => `line ${b.line}: ${b.skipped}`).join('; ')})` : '';
  console.log(`${doc}: ${checked} ts block(s) type-checked${note}`);
}
for (const doc of pending) console.log(`${doc}: NOT CHECKED: ${PENDING[doc]}`);
for (const p of problems) console.error(p);
for (const d of diagnostics) console.error(d);
if (keep) console.log(`generated files kept in ${relative(ROOT, OUT)}`);
else rmSync(OUT, { recursive: true, force: true });

if (problems.length || tscFailed || diagnostics.length) {
  console.error(`check:docs failed: ${problems.length + diagnostics.length} problem(s) in the documentation examples`);
  process.exit(1);
}
console.log("check:docs: every example compiles, and the consumer options table is the declaration's");
