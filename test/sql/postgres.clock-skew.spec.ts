import { postgresBackend, Rheo } from '../../lib';
import { runClockSkewSuite } from '../support/clock-skew-suite';
import { dropSchema, freshSchema, PG_URL } from './pg-helpers';

// The children build their backend with its default clock: the store's time.
const schema = freshSchema('skew');

runClockSkewSuite({
  name: 'postgres',
  backend: { name: 'postgres', options: { url: PG_URL, schema, poolSize: 3 } },
  rheo: new Rheo(postgresBackend({ url: PG_URL, schema })),
  cleanup: () => dropSchema(schema),
});
