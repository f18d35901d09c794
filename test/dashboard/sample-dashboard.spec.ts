import type { ExecutionContext } from '@nestjs/common';
import request from 'supertest';
import { LocalOnlyGuard } from '../../sample/local-only.guard';
import { MARKET_EVENTS } from '../../sample/market';
import { sampleApp } from '../e2e/support';

// The sample app mounts the dashboard at /rheo with actions, for this machine only.

describe('the sample app’s dashboard', () => {
  const app = sampleApp('sample-dashboard');

  it('serves the page and the overview, with the local consumers’ states', async () => {
    const http = request(app().getHttpServer());
    const page = await http.get('/rheo').expect(200);
    expect(page.text).toContain('data-read-only="false"');
    const overview = await http.get('/rheo/api/overview').expect(200);
    const stream = (overview.body as { streams: Array<{ name: string; groups: Array<{ group: string; consumer?: string }> }> }).streams[0];
    expect(stream.name).toBe(MARKET_EVENTS);
    expect(stream.groups.map((g) => [g.group, g.consumer])).toEqual([
      ['risk', 'running'],
      ['surveillance', 'running'],
    ]);
  });

  it('lets in only requests from this machine', () => {
    const from = (ip: string) => ({ switchToHttp: () => ({ getRequest: () => ({ ip }) }) }) as unknown as ExecutionContext;
    const guard = new LocalOnlyGuard();
    expect(['127.0.0.1', '::1', '::ffff:127.0.0.1', '10.0.0.7', ''].map((ip) => guard.canActivate(from(ip)))).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
  });
});
