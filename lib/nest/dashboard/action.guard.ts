// The gate of the dashboard's actions (redrive, replay, reset, pause, resume, skip,
// reschedule, cancel-delayed), after the user's guard: refused on a read-only
// dashboard, and refused without the custom header.
// A plain HTML form or a cross-site <img>/<form> cannot set a header, and a
// cross-origin fetch that sets one needs a CORS preflight the app does not grant:
// that is the dashboard's CSRF defence (docs/adr/027).
import { type CanActivate, type ExecutionContext, ForbiddenException, Inject, Injectable } from '@nestjs/common';
import type { ResolvedDashboardOptions } from './dashboard-options';
import { DASHBOARD_OPTIONS } from './dashboard-service';

/** The header every action POST must carry, with the value `1`. */
export const DASHBOARD_ACTION_HEADER = 'x-rheo-dashboard';

@Injectable()
export class DashboardActionGuard implements CanActivate {
  constructor(@Inject(DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions) {}

  canActivate(context: ExecutionContext): boolean {
    if (this.options.readOnly) throw new ForbiddenException('The dashboard is read-only (RheoDashboardModule readOnly: true)');
    // Express and Fastify both give the lower-cased headers as a plain object.
    const headers = context.switchToHttp().getRequest<{ headers: Record<string, string | string[] | undefined> }>().headers;
    if (headers[DASHBOARD_ACTION_HEADER] !== '1')
      throw new ForbiddenException(`Dashboard actions need the header ${DASHBOARD_ACTION_HEADER}: 1`);
    return true;
  }
}
