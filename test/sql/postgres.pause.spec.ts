// Pausing a group across processes on PostgreSQL: the shared suite (test/support/pause-suite.ts).
// The pause is kept in every group partition row (`paused_to`, the claims' gate).
import { postgresBackend, Rheo } from '../../lib';
import { runPauseSuite, type StoredPause } from '../support/pause-suite';
import { dropSchema, freshSchema, PG_URL, pgDataSource } from './pg-helpers';

// Each child has its own pool and LISTEN connection.
const schema = freshSchema('pause');

runPauseSuite({
  name: 'postgres',
  backend: { name: 'postgres', options: { url: PG_URL, schema, poolSize: 4 } },
  rheo: new Rheo(postgresBackend({ url: PG_URL, schema, poolSize: 4 })),
  async storedPause(stream, group, partitions) {
    const ds = await pgDataSource(1);
    try {
      const rows = (await ds.query(
        `SELECT partition, paused_to FROM "${schema}".rheo_group_partitions WHERE stream = $1 AND group_name = $2 ORDER BY partition`,
        [stream, group],
      )) as Array<{ partition: number; paused_to: string | null }>;
      expect(rows).toHaveLength(partitions);
      // A pause with no `until` gates claims until a far-off sentinel: later than now, either way.
      return rows.map(({ partition, paused_to }): StoredPause => {
        if (paused_to === null) return 'not paused';
        return Number(paused_to) > Date.now() ? 'paused' : `partition ${partition}: paused_to ${paused_to}, already past`;
      });
    } finally {
      await ds.destroy();
    }
  },
  cleanup: () => dropSchema(schema),
});
