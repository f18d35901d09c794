import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import { flowProperty } from '../support/flow-property';

// Flow limits under random operations on the memory backend (test/support/flow-property.ts).
let n = 0;
describe('property: flow limits', () => {
  flowProperty(
    (clock) => new MemoryBackend({ clock }),
    () => `s${++n}`,
    1000,
  );
});
