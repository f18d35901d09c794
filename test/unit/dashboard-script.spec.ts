import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DASHBOARD_SCRIPT_DIR, DASHBOARD_SCRIPT_PARTS, dashboardScript } from '../../lib/nest/dashboard/assets/dashboard-script';

// The page's script is the files of lib/nest/dashboard/assets/browser/, joined in a
// fixed order into one classic script (docs/adr/045); the browser specs run it.
describe("the dashboard's script", () => {
  it('joins every file of the browser directory, and only those, with dashboard.js (which starts the page) last', () => {
    const files = readdirSync(DASHBOARD_SCRIPT_DIR).filter((f) => f.endsWith('.js'));
    expect([...DASHBOARD_SCRIPT_PARTS].sort()).toEqual(files.sort());
    expect(DASHBOARD_SCRIPT_PARTS.at(-1)).toBe('dashboard.js');
  });

  it('serves the files byte for byte, in that order, inside one strict-mode function', () => {
    const script = dashboardScript();
    let from = 0;
    for (const file of DASHBOARD_SCRIPT_PARTS) {
      const at = script.indexOf(readFileSync(join(DASHBOARD_SCRIPT_DIR, file), 'utf8'), from);
      expect({ file, found: at >= from }).toEqual({ file, found: true });
      from = at;
    }
    expect(script.startsWith("(function () {\n'use strict';\n")).toBe(true);
    expect(script.endsWith('})();\n')).toBe(true);
    expect(() => new Function(script)).not.toThrow(); // one classic script: no import, no export
    expect(dashboardScript()).toBe(script);
  });
});
