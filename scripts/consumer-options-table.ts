// The table of every consumer option in docs/consumers.md, generated from the
// options' one declaration (CONSUMER_FIELDS, lib/runtime/consumer-settings.ts)
// between two marker comments, so the docs cannot drift from the code.
//
//   npm run docs:options                                               rewrite the table in docs/consumers.md
//   npx ts-node --transpile-only scripts/consumer-options-table.ts     print it
//
// `npm run check:docs` (scripts/check-doc-examples.mjs) fails on a table that
// differs from the declaration, naming the first row that does.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONSUMER_FIELDS, type FieldKind, type FieldSpec } from '../lib/runtime/consumer-settings';

/** The document that holds the table, from the repository root. */
export const TABLE_DOC = 'docs/consumers.md';
export const TABLE_BEGIN = '<!-- consumer-options:begin (generated from CONSUMER_FIELDS by `npm run docs:options`; do not edit) -->';
export const TABLE_END = '<!-- consumer-options:end -->';

const HEADER = ['option', 'default', 'kind', 'set on', 'meaning'];

const KIND_WORDS: Record<FieldKind, string> = {
  identity: 'identity',
  process: 'per process',
  group: 'group setting',
  handler: 'handler',
};

/** A value as the table writes it: numbers bare, the rest as code. */
function valueText(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return `\`'${value}'\``;
  if (typeof value === 'boolean') return `\`${value}\``;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value).map(([k, v]) => `${k}: ${typeof v === 'string' ? `'${v}'` : String(v)}`);
    return `\`{ ${entries.join(', ')} }\``;
  }
  throw new Error(`no table text for the default ${String(value)}: give the field a defaultText`);
}

function defaultText(name: string, spec: FieldSpec<unknown>): string {
  if (spec.required) return 'required';
  if (spec.defaultText !== undefined) return spec.defaultText;
  if (spec.default === undefined) return 'none';
  if (typeof spec.default === 'function') throw new Error(`${name}: a default made per consumer needs a defaultText`);
  return valueText(spec.default);
}

/** Where a field may be set: the decorator, the module's configuration (settings only), the runtime `Consumer`. */
function setOnText(spec: FieldSpec<unknown>): string {
  const places: string[] = [];
  if (spec.on.includes('nest')) places.push('`@RheoConsumer`');
  if (spec.on.includes('nest') && (spec.kind === 'process' || spec.kind === 'group')) places.push('`defaults`', '`consumers`');
  if (spec.on.includes('runtime')) places.push('`Consumer`');
  return places.join(', ');
}

/** The table's rows, header first, one per field in the declaration's order; cells unescaped. */
export function optionRows(): string[][] {
  const fields = CONSUMER_FIELDS as Record<string, FieldSpec<unknown>>;
  const rows = Object.entries(fields).map(([name, spec]) => [
    `\`${name}\``,
    defaultText(name, spec),
    KIND_WORDS[spec.kind],
    setOnText(spec),
    spec.doc,
  ]);
  return [HEADER, ...rows];
}

const row = (cells: readonly string[]) => `| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`;

/** The table as Markdown, unpadded (Prettier aligns it). */
export function optionsTable(): string {
  const [header, ...rows] = optionRows();
  return [row(header), row(header.map(() => '---')), ...rows.map(row)].join('\n');
}

/** The cells of one Markdown table line, trimmed and unescaped. */
function cellsOf(line: string): string[] {
  return line
    .trim()
    .replace(/^\|/, '')
    .replace(/(?<!\\)\|$/, '')
    .split(/(?<!\\)\|/)
    .map((c) => c.trim().replace(/\\\|/g, '|'));
}

/** Where the table sits in `markdown`: the lines between the markers (exclusive). */
function tableLines(markdown: string): { lines: string[]; begin: number; end: number } | string {
  const lines = markdown.split('\n');
  const begin = lines.findIndex((l) => l.trim() === TABLE_BEGIN);
  const end = lines.findIndex((l, i) => i > begin && l.trim() === TABLE_END);
  if (begin < 0 || end < 0) return `no consumer options table: the markers ${TABLE_BEGIN} and ${TABLE_END} are missing`;
  return { lines, begin, end };
}

/**
 * Why the table in `markdown` is not the one the declaration makes, naming the
 * first row that differs; undefined when it is. Compares cells, so Prettier's
 * padding does not count.
 */
export function tableDifference(markdown: string): string | undefined {
  const found = tableLines(markdown);
  if (typeof found === 'string') return found;
  const written = found.lines
    .slice(found.begin + 1, found.end)
    .filter((l) => l.trim() !== '')
    .map(cellsOf)
    .filter((cells, i) => i !== 1 || !cells.every((c) => /^:?-+:?$/.test(c)));
  const expected = optionRows();
  const fix = 'run `npm run docs:options`';
  for (let i = 0; i < Math.max(written.length, expected.length); i++) {
    const has = written[i];
    const wants = expected[i];
    const name = i === 0 ? 'the header' : `row ${(wants ?? has)[0]}`;
    if (has === undefined) return `consumer options table: ${name} is missing (${fix})`;
    if (wants === undefined) return `consumer options table: ${name} is not a consumer option (${fix})`;
    if (row(has) !== row(wants))
      return `consumer options table: ${name} differs from CONSUMER_FIELDS: has "${row(has)}", the declaration makes "${row(wants)}" (${fix})`;
  }
  return undefined;
}

/** `markdown` with the table between the markers replaced by the generated one. */
export function withTable(markdown: string): string {
  const found = tableLines(markdown);
  if (typeof found === 'string') throw new Error(`${TABLE_DOC}: ${found}`);
  return [...found.lines.slice(0, found.begin + 1), '', optionsTable(), '', ...found.lines.slice(found.end)].join('\n');
}

async function main(args: string[]): Promise<void> {
  if (!args.includes('--write')) {
    console.log(optionsTable());
    return;
  }
  const file = join(__dirname, '..', TABLE_DOC);
  // Prettier pads the columns as `npm run lint` expects them.
  const prettier = await import('prettier');
  const config = (await prettier.resolveConfig(file)) ?? {};
  writeFileSync(file, await prettier.format(withTable(readFileSync(file, 'utf8')), { ...config, filepath: file }));
  console.log(`${TABLE_DOC}: consumer options table written`);
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
