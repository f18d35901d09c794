import { postgresBackend } from '../../lib';
import { flowProperty } from '../support/flow-property';
import { dropSchema, freshSchema, PG_URL } from './pg-helpers';

// Flow limits under random fetches, settles, clock moves, skips, redrives and replays on
// PostgreSQL (test/support/flow-property.ts): the same property the memory backend holds to.
// A backend per run, each on the one schema (installed by the first).
const schema = freshSchema('flow_property');
let n = 0;

afterAll(() => dropSchema(schema));

describe('property: flow limits (postgres)', () => {
  flowProperty(
    (clock) => postgresBackend({ url: PG_URL, schema, clock, poolSize: 2 }),
    () => `s${++n}`,
    100,
  );
});
