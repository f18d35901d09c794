import { postgresBackend, Rheo } from '../../lib';
import { runMultiprocessSuite } from '../support/multiprocess-suite';
import { dropSchema, freshSchema, PG_URL } from './pg-helpers';

// Each child has its own pool and LISTEN connection.
const schema = freshSchema('mp');

runMultiprocessSuite({
  name: 'postgres',
  backend: { name: 'postgres', options: { url: PG_URL, schema, poolSize: 3 } },
  rheo: new Rheo(postgresBackend({ url: PG_URL, schema })),
  cleanup: () => dropSchema(schema),
});
