// Flow control across processes on PostgreSQL: the shared suite (test/support/flow-suite.ts).
// The checker's rows go to a table of their own in the test's schema, written by the
// children over connections of their own.
import { postgresBackend, Rheo } from '../../lib';
import { runFlowSuite } from '../support/flow-suite';
import { dropSchema, freshSchema, PG_URL } from './pg-helpers';

const schema = freshSchema('flow');

runFlowSuite({
  name: 'postgres',
  // Each child has its own pool and LISTEN connection.
  processes: { kind: 'fork', backend: { name: 'postgres', options: { url: PG_URL, schema, poolSize: 4 } } },
  rheo: new Rheo(postgresBackend({ url: PG_URL, schema })),
  log: (scenario) => ({ kind: 'postgres', url: PG_URL, schema, scenario }),
  cleanup: () => dropSchema(schema),
});
