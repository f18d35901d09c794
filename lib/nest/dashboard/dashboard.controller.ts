// The dashboard's routes: the page, its two assets, and the JSON API the page
// uses. The class is made per forRoot, because Nest reads a controller's path
// when the class is decorated and the path is an option (docs/adr/027); the user's
// guard goes on the class, so page, assets and API are protected alike.
import {
  Body,
  type CanActivate,
  Controller,
  Get,
  Header,
  HttpCode,
  Inject,
  Param,
  Post,
  Query,
  Req,
  type Type,
  UseFilters,
  UseGuards,
} from '@nestjs/common';
import type { DeadLetterPage, GroupPauseSummary, GroupSummary, Overview, StreamSummary, WaitingResultSummary } from '../../admin/types';
import { RheoHttpExceptionFilter } from '../rheo-http-exception.filter';
import { DashboardActionGuard } from './action.guard';
import { dashboardScript } from './assets/dashboard-script';
import { DASHBOARD_STYLE } from './assets/dashboard-style';
import { renderDashboardPage } from './assets/dashboard-page';
import type { ResolvedDashboardOptions } from './dashboard-options';
import {
  cancelDelayedBody,
  deadLetterQuery,
  overviewQuery,
  pauseBody,
  redriveBody,
  replayBody,
  rescheduleBody,
  resetBody,
  resumeBody,
  skipBody,
} from './dashboard-requests';
import { DASHBOARD_SERVICE, type DashboardService } from './dashboard-service';
import type { LagHistorySnapshot } from './lag-history';

/**
 * Only same-origin scripts and styles, no inline code, no framing (an action
 * button in a hidden frame is a click away from a redrive).
 */
const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The request's path, which the page builds its asset and API URLs from (a global prefix included). */
function basePath(req: { originalUrl?: string; url?: string }, configured: string): string {
  const path = (req.originalUrl ?? req.url ?? '').split('?')[0].replace(/\/+$/, '');
  // The route matched it; a path that is not plain segments falls back to the option.
  return /^(\/[A-Za-z0-9._~%-]+)*$/.test(path) ? path : configured;
}

/** The controller class for one dashboard: path, guard and options fixed at forRoot. */
export function createDashboardController(options: ResolvedDashboardOptions): Type<unknown> {
  const guards: Array<Type<CanActivate> | CanActivate> = options.guard ? [options.guard] : [];
  const script = dashboardScript();

  @Controller(options.path)
  @UseGuards(...guards)
  @UseFilters(RheoHttpExceptionFilter)
  class RheoDashboardController {
    constructor(@Inject(DASHBOARD_SERVICE) private readonly dashboard: DashboardService) {}

    @Get()
    @Header('Content-Type', 'text/html; charset=utf-8')
    @Header('Content-Security-Policy', PAGE_CSP)
    @Header('X-Frame-Options', 'DENY')
    @Header('X-Content-Type-Options', 'nosniff')
    @Header('Referrer-Policy', 'no-referrer')
    @Header('Cache-Control', 'no-store')
    page(@Req() req: { originalUrl?: string; url?: string }): string {
      return renderDashboardPage({
        base: basePath(req, options.path),
        instance: options.instance,
        readOnly: options.readOnly,
        showPayloads: options.showPayloads,
      });
    }

    @Get('assets/dashboard.js')
    @Header('Content-Type', 'text/javascript; charset=utf-8')
    @Header('X-Content-Type-Options', 'nosniff')
    @Header('Cache-Control', 'no-cache')
    script(): string {
      return script;
    }

    @Get('assets/dashboard.css')
    @Header('Content-Type', 'text/css; charset=utf-8')
    @Header('X-Content-Type-Options', 'nosniff')
    @Header('Cache-Control', 'no-cache')
    style(): string {
      return DASHBOARD_STYLE;
    }

    @Get('api/overview')
    @Header('Cache-Control', 'no-store')
    overview(@Query() query: Record<string, unknown>): Promise<Overview> {
      return this.dashboard.overview(overviewQuery(query));
    }

    @Get('api/lag-history')
    @Header('Cache-Control', 'no-store')
    lagHistory(): LagHistorySnapshot {
      return this.dashboard.lagHistory();
    }

    @Get('api/streams')
    @Header('Cache-Control', 'no-store')
    streams(): Promise<StreamSummary[]> {
      return this.dashboard.admin.streams();
    }

    @Get('api/streams/:stream/groups')
    @Header('Cache-Control', 'no-store')
    groups(@Param('stream') stream: string): Promise<GroupSummary[]> {
      return this.dashboard.admin.groups(stream);
    }

    @Get('api/streams/:stream/groups/:group')
    @Header('Cache-Control', 'no-store')
    group(@Param('stream') stream: string, @Param('group') group: string): Promise<GroupSummary> {
      return this.dashboard.admin.group(stream, group);
    }

    @Get('api/streams/:stream/groups/:group/dead-letters')
    @Header('Cache-Control', 'no-store')
    async deadLetters(
      @Param('stream') stream: string,
      @Param('group') group: string,
      @Query() query: Record<string, unknown>,
    ): Promise<DeadLetterPage> {
      const page = deadLetterQuery(query);
      return this.dashboard.admin.deadLetters(stream, group, { ...page, withPayloads: options.showPayloads });
    }

    @Post('api/streams/:stream/groups/:group/redrive')
    @HttpCode(200)
    @UseGuards(DashboardActionGuard)
    redrive(@Param('stream') stream: string, @Param('group') group: string, @Body() body: unknown): Promise<{ redriven: number }> {
      return this.dashboard.admin.redrive(stream, group, redriveBody(body));
    }

    @Post('api/streams/:stream/groups/:group/replay')
    @HttpCode(200)
    @UseGuards(DashboardActionGuard)
    replay(@Param('stream') stream: string, @Param('group') group: string, @Body() body: unknown): Promise<{ replayed: number }> {
      return this.dashboard.admin.replay(stream, group, replayBody(body));
    }

    @Post('api/streams/:stream/groups/:group/reset')
    @HttpCode(200)
    @UseGuards(DashboardActionGuard)
    reset(@Param('stream') stream: string, @Param('group') group: string, @Body() body: unknown): Promise<{ reset: true }> {
      return this.dashboard.admin.reset(stream, group, resetBody(body, group));
    }

    @Post('api/streams/:stream/groups/:group/pause')
    @HttpCode(200)
    @UseGuards(DashboardActionGuard)
    pause(@Param('stream') stream: string, @Param('group') group: string, @Body() body: unknown): Promise<GroupPauseSummary> {
      return this.dashboard.admin.pauseGroup(stream, group, pauseBody(body));
    }

    @Post('api/streams/:stream/groups/:group/resume')
    @HttpCode(200)
    @UseGuards(DashboardActionGuard)
    resume(@Param('stream') stream: string, @Param('group') group: string, @Body() body: unknown): Promise<{ resumed: boolean }> {
      return this.dashboard.admin.resumeGroup(stream, group, resumeBody(body));
    }

    // Skip and reschedule answer 200 with a result per id, some possibly refused
    // (lease_held, settled, unknown): the operator sees each, as the CLI prints each.
    @Post('api/streams/:stream/groups/:group/skip')
    @HttpCode(200)
    @UseGuards(DashboardActionGuard)
    skip(@Param('stream') stream: string, @Param('group') group: string, @Body() body: unknown): Promise<WaitingResultSummary> {
      return this.dashboard.admin.skip(stream, group, skipBody(body));
    }

    @Post('api/streams/:stream/groups/:group/reschedule')
    @HttpCode(200)
    @UseGuards(DashboardActionGuard)
    reschedule(@Param('stream') stream: string, @Param('group') group: string, @Body() body: unknown): Promise<WaitingResultSummary> {
      return this.dashboard.admin.reschedule(stream, group, rescheduleBody(body));
    }

    // A delayed event is cancelled in every group of its stream, so the route is the stream's.
    @Post('api/streams/:stream/cancel-delayed')
    @HttpCode(200)
    @UseGuards(DashboardActionGuard)
    cancelDelayed(@Param('stream') stream: string, @Body() body: unknown): Promise<{ groups: number }> {
      const { eventId, input } = cancelDelayedBody(body);
      return this.dashboard.admin.cancelDelayed(stream, eventId, input);
    }
  }

  return RheoDashboardController;
}
