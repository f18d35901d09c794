import { postgresBackend, Rheo } from '../../lib';
import { runBroadcastSuite } from '../support/broadcast-suite';
import { dropSchema, freshSchema, PG_URL, pgDataSource } from './pg-helpers';

// Each instance has its own pool and LISTEN connection.
const schema = freshSchema('bc');

runBroadcastSuite({
  name: 'postgres',
  backend: { name: 'postgres', options: { url: PG_URL, schema, poolSize: 3 } },
  rheo: new Rheo(postgresBackend({ url: PG_URL, schema })),
  racer: (clock) => new Rheo(postgresBackend({ url: PG_URL, schema, clock, poolSize: 2 })),
  async leftovers(stream, group, job) {
    const ds = await pgDataSource(1);
    try {
      const count = async (table: string, where: string, params: unknown[]) =>
        Number((await ds.query(`SELECT count(*) AS n FROM "${schema}"."${table}" WHERE ${where}`, params))[0].n);
      const byGroup = 'stream = $1 AND group_name = $2';
      return {
        groups: await count('rheo_groups', 'stream = $1 AND name = $2', [stream, group]),
        positions: await count('rheo_group_partitions', byGroup, [stream, group]),
        deliveries: await count('rheo_deliveries', byGroup, [stream, group]),
        deadLetters: await count('rheo_dead_letters', byGroup, [stream, group]),
        heartbeat: await count('rheo_jobs', 'name = $1', [job]),
      };
    } finally {
      await ds.destroy();
    }
  },
  cleanup: () => dropSchema(schema),
});
