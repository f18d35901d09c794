// The start-up lines about an instance's backend: which one, where its data
// lives (Backend.describe: never credentials), and the schema versions its
// start-up applied (install: 'auto').
import type { Backend } from '../backends/backend';

/** `schema versions 1, 2` or `schema version 2`. */
function versions(list: number[]): string {
  return list.length === 1 ? `schema version ${list[0]}` : `schema versions ${list.join(', ')}`;
}

/** The lines to log once the backend of instance `name` has started. */
export function backendLines(name: string, backend: Backend): string[] {
  const description = typeof backend.describe === 'function' ? backend.describe() : undefined;
  const lines = [`Instance "${name}": ${backend.name} backend${description ? `, ${description.target}` : ''}`];
  const installed = description?.installed ?? [];
  if (installed.length > 0) {
    const first = installed[0];
    const last = installed[installed.length - 1];
    lines.push(
      first === 1
        ? `Instance "${name}": installed the rheo tables (${versions(installed)})`
        : `Instance "${name}": upgraded the rheo tables from schema version ${first - 1} to ${last} (applied ${versions(installed)})`,
    );
  }
  return lines;
}
