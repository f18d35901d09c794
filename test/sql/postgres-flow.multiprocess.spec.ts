import { postgresBackend, Rheo } from '../../lib';
import { runMultiprocessSuite } from '../support/multiprocess-suite';
import { dropSchema, freshSchema, PG_URL } from './pg-helpers';

// The multi-process scenario (three consumer processes, then one SIGKILLed mid-stream) on a
// group with ordering 'key' (docs/adr/049-flow-control.md): every claim is the flow claim,
// every end hands a key's place on through a release row, and a killed holder's keys wait
// for its leases to expire. Nothing may be left waiting: the lag must reach 0.
const schema = freshSchema('mp_flow');

runMultiprocessSuite({
  name: "postgres, ordering 'key'",
  backend: { name: 'postgres', options: { url: PG_URL, schema, poolSize: 3 } },
  rheo: new Rheo(postgresBackend({ url: PG_URL, schema })),
  cleanup: () => dropSchema(schema),
  group: { ordering: 'key' },
});
