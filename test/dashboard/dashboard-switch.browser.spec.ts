import type { Browser, Page, Route } from 'playwright-core';
import { memoryBackend, Rheo, RheoDashboardModule, RheoModule } from '../../lib';
import { until } from '../support/until';
import { type DashboardApp, serveDashboard } from './apps';
import { launchChromium } from './browser';

// Opening another group while the page still reads the first one's dead letters:
// the late answer belongs to the first group and must not land in the second's
// view (with Redrive buttons that would post the first group's event ids to the
// second group). The answers are held in the browser (page.route) to order them.

jest.setTimeout(90_000);

const STREAM = 'orders';
let browser: Browser;
let s: DashboardApp;
let page: Page;
const deadLetterOf: Record<string, string> = {};

/** The dead-letter reads of `group`, held until released. */
function hold(group: string) {
  const held: Route[] = [];
  const pattern = new RegExp(`/rheo/api/streams/${STREAM}/groups/${group}/dead-letters`);
  return {
    start: () => page.route(pattern, (route) => void held.push(route)),
    next: () => until(`a dead-letter read of ${group}`, () => held.shift()),
    stop: () => page.unroute(pattern),
  };
}

const detailRows = () => page.locator('[data-testid=detail] [data-testid=dead-letter-row]');

beforeAll(async () => {
  browser = await launchChromium();
  s = await serveDashboard('express', {
    imports: [
      RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: STREAM }] }),
      RheoDashboardModule.forRoot({ readOnly: false }),
    ],
  });
  const rheo = s.app.get(Rheo);
  for (const group of ['a', 'b']) {
    await rheo.createGroup(STREAM, group, { start: 'end' });
    await rheo.append(STREAM, { key: group, payload: { group } });
    const [lease] = await rheo.fetch(STREAM, group, { limit: 1 });
    await rheo.reject(lease, { reason: `poison in ${group}` });
    deadLetterOf[group] = lease.event.id;
  }
  page = await browser.newPage();
});

afterAll(async () => {
  await page?.close();
  await browser?.close();
  await s?.app.close();
});

it("shows only the opened group's dead letters when the previous group's answer comes late", async () => {
  await page.goto(`${s.url}/rheo`);
  const a = hold('a');
  const b = hold('b');
  await a.start();
  await page.locator('[data-testid=group-row][data-group="a"] [data-testid=open-group]').click();
  const lateA = await a.next();

  // B opened while A's dead letters are on their way; its refresh waits for A's to finish.
  await b.start();
  await page.locator('[data-testid=group-row][data-group="b"] [data-testid=open-group]').click();
  await page.locator('[data-testid=detail] h2', { hasText: `${STREAM} / b` }).waitFor();
  await lateA.continue();
  const firstB = await b.next();

  // A's answer has been read and B's refresh has begun: B's view shows nothing of A.
  expect(await detailRows().count()).toBe(0);
  await firstB.continue();
  await b.stop();
  await a.stop();
  await until("b's dead letter", async () => (await detailRows().getAttribute('data-event-id')) === deadLetterOf.b);
  expect(await page.locator('[data-testid=detail] h2').textContent()).toBe(`${STREAM} / b`);
});
