// The flow suite (test/support/flow-suite.ts) on the memory backend: a store that lives
// in one process, so the three consumers run in this one, and a kill cuts one off the
// store mid-call (its leases stay until they expire, as a SIGKILLed process's do). The
// real multi-process runs are test/sql/postgres.flow.spec.ts, test/sql/sqlite.flow.spec.ts
// and test/redis/flow.multiprocess.spec.ts.
import { memoryBackend, Rheo } from '../../lib';
import { runFlowSuite } from '../support/flow-suite';

const backend = memoryBackend();

runFlowSuite({
  name: 'memory',
  processes: { kind: 'in-process', backend },
  rheo: new Rheo(backend),
  log: (scenario) => ({ kind: 'memory', scenario }),
  // Three consumers in one process get through the CI size in about a second: kill more often.
  killEveryMs: 250,
  cleanup: async () => undefined,
});
