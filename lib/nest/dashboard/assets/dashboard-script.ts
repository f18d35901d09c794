// The page's script, served at <path>/assets/dashboard.js. Its source is the
// plain browser JavaScript of browser/ (type-checked by tsconfig.browser.json,
// linted with browser globals); the build copies that directory beside this
// module, so it is read from here both in lib/ and in dist/ (docs/adr/045).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where the source files are: beside this module, in lib/ and once built in dist/. */
export const DASHBOARD_SCRIPT_DIR = join(__dirname, 'browser');

/**
 * The files of browser/ in the order they are joined. They share one scope (the
 * function they are joined inside, so nothing reaches `window`); dashboard.js
 * starts the page, so it comes last, after every declaration it uses.
 */
export const DASHBOARD_SCRIPT_PARTS: readonly string[] = [
  'dom.js',
  'http.js',
  'chart.js',
  'overview.js',
  'pause.js',
  'waiting.js',
  'group.js',
  'dashboard.js',
];

let script: string | undefined;

/**
 * The one classic script the page loads: the parts, each under a comment naming
 * its file, inside one strict-mode function. Read on first use and kept: a
 * package missing its files fails when a dashboard is set up, not on a request.
 */
export function dashboardScript(): string {
  script ??=
    "(function () {\n'use strict';\n" +
    DASHBOARD_SCRIPT_PARTS.map((file) => `// ---- ${file}\n${readFileSync(join(DASHBOARD_SCRIPT_DIR, file), 'utf8')}`).join('\n') +
    '})();\n';
  return script;
}
