import { postgresBackend } from '../../lib';
import { runConformance } from '../../lib/backend';
import { dropSchema, freshSchema, PG_URL } from '../sql/pg-helpers';

const schema = freshSchema('conf');

runConformance({
  name: 'postgres',
  create: async (clock) => postgresBackend({ url: PG_URL, schema, clock, poolSize: 4 }),
  cleanup: () => dropSchema(schema),
  // Port 1 on loopback: nothing listens there, so connecting is refused.
  unreachable: () => postgresBackend({ url: 'postgres://postgres@127.0.0.1:1/test', schema }),
});
