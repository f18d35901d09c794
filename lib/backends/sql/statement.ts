import type { TypeormQueryable } from './external';

declare const rowType: unique symbol;

/**
 * A statement's text, tagged with the type of the rows it returns (its SELECT
 * list or RETURNING clause), so that running it yields typed rows with no cast at
 * the call site. The tag exists only for the compiler: at run time it is the
 * string. An untagged string runs too; its rows are `unknown`.
 */
export type Sql<Row> = string & { readonly [rowType]?: Row };

/** Tag a statement with its row type: `returning<DbStream>('SELECT name, partitions, created_at FROM ...')`. */
export function returning<Row>(text: string): Sql<Row> {
  return text as Sql<Row>;
}

/** Run one statement on a DataSource, QueryRunner or EntityManager: its rows, typed by the statement's tag. */
export async function query<Row>(on: TypeormQueryable, sql: Sql<Row>, params: unknown[]): Promise<Row[]> {
  return (await on.query(sql, params)) as Row[];
}
