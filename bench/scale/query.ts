// A filtered query page at a big history: limit 50, a payload filter matching
// 1 event in 1000 (`tenant`, see tenantPayload), walked with the cursor and as
// first pages of other tenants in both orders.
import { performance } from 'node:perf_hooks';
import type { Query, Rheo } from '../../lib';
import { latencies, type LatencyFigures } from './claims';

const LIMIT = 50;
const WALK_PAGES = 20;
const FIRST_PAGES = 10;
/** A backend that scans the whole history per page still gets a figure, from fewer pages: this much for the walk, as much for first pages. */
const BUDGET_MS = 60_000;
/** Pages each part takes whatever the budget says. */
const MIN_PAGES = 2;

export interface QueryFigures extends LatencyFigures {
  pages: number;
  walkP50Ms: number;
  firstPageP50Ms: number;
  /** Events of `t7` the walk returned, and how many it should have. */
  matched: number;
  expected: number;
}

/** How many of `0 .. events - 1` are `i % 1000 == tenant`. */
function matchesOf(tenant: number, events: number): number {
  return events > tenant ? Math.floor((events - 1 - tenant) / 1000) + 1 : 0;
}

export async function queryPages(rheo: Rheo, stream: string, events: number): Promise<QueryFigures> {
  let started = performance.now();
  const overBudget = (samples: number) => samples >= MIN_PAGES && performance.now() - started > BUDGET_MS;
  const timed = async (query: Query) => {
    const t0 = performance.now();
    const page = await rheo.queryPage(query);
    return { page, ms: performance.now() - t0 };
  };

  const walk: number[] = [];
  const seen = new Set<string>();
  let matched = 0;
  let cursor: string | undefined;
  while (walk.length < WALK_PAGES && !overBudget(walk.length)) {
    const { page, ms } = await timed({ stream, where: { payload: { tenant: 't7' } }, limit: LIMIT, cursor });
    walk.push(ms);
    for (const e of page.items) {
      if ((e.payload as { tenant?: unknown }).tenant !== 't7') throw new Error(`query returned event ${e.id} of another tenant`);
      if (seen.has(e.id)) throw new Error(`query pages returned event ${e.id} twice`);
      seen.add(e.id);
    }
    matched += page.items.length;
    if (!page.nextCursor) break;
    cursor = page.nextCursor;
  }

  const first: number[] = [];
  started = performance.now();
  for (let k = 1; k <= FIRST_PAGES && !overBudget(first.length); k++) {
    const order = k % 2 ? 'asc' : 'desc';
    const { page, ms } = await timed({ stream, where: { payload: { tenant: `t${(k * 97) % 1000}` } }, limit: LIMIT, order });
    if (page.items.length !== Math.min(LIMIT, matchesOf((k * 97) % 1000, events))) {
      throw new Error(`first page of t${(k * 97) % 1000} (${order}) returned ${page.items.length} events`);
    }
    first.push(ms);
  }

  return {
    ...latencies([...walk, ...first]),
    pages: walk.length + first.length,
    walkP50Ms: latencies(walk).p50Ms,
    firstPageP50Ms: latencies(first).p50Ms,
    matched,
    expected: Math.min(matchesOf(7, events), walk.length * LIMIT),
  };
}
