import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import { runConformance } from 'nestjs-rheo/backend';

runConformance({
  name: 'memory',
  create: async (clock) => new MemoryBackend({ clock }),
  unreachable: () => {
    // A closed memory backend answers nothing, like a server that has gone away.
    const backend = new MemoryBackend();
    void backend.close();
    return backend;
  },
});
