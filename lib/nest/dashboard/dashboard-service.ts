// What the dashboard's routes call: the one admin service (lib/admin) over the
// chosen instance's Rheo, told the states of the consumers this process runs, and
// the lag history the chart draws.
import { Logger, type OnModuleInit } from '@nestjs/common';
import type { ModuleRef } from '@nestjs/core';
import { RheoAdmin } from '../../admin/rheo-admin';
import type { Overview, RheoAdminOperations } from '../../admin/types';
import { RheoError } from '../../core/errors';
import type { Rheo } from '../../core/rheo';
import { getRheoServerToken, getRheoToken } from '../constants';
import type { RheoServer } from '../rheo-server';
import type { ResolvedDashboardOptions } from './dashboard-options';
import { LagHistory, type LagHistorySnapshot } from './lag-history';

/** Injection token of a dashboard module's {@link DashboardService}. */
export const DASHBOARD_SERVICE = 'RheoDashboardService';
/** Injection token of a dashboard module's resolved options. */
export const DASHBOARD_OPTIONS = 'RheoDashboardOptions';

export class DashboardService implements OnModuleInit {
  private adminService?: RheoAdminOperations;
  private readonly history = new LagHistory();
  private readonly logger = new Logger('RheoDashboard');

  constructor(
    readonly options: ResolvedDashboardOptions,
    private readonly moduleRef: ModuleRef,
  ) {}

  /**
   * Find the instance's Rheo and RheoServer. Looked up across the whole app
   * (`strict: false`): the RheoModule need not be global nor imported here, as
   * long as the app has it; a dashboard naming a missing instance fails the boot.
   */
  onModuleInit(): void {
    const name = this.options.instance;
    let rheo: Rheo;
    let server: RheoServer;
    try {
      rheo = this.moduleRef.get<Rheo>(getRheoToken(name), { strict: false });
      server = this.moduleRef.get<RheoServer>(getRheoServerToken(name), { strict: false });
    } catch (err) {
      throw new RheoError('invalid_argument', `RheoDashboardModule: instance "${name}" has no RheoModule in this app`, {
        field: 'instance',
        cause: err,
      });
    }
    this.adminService = new RheoAdmin(rheo, {
      // Groups this process consumes show their consumer's state (running, backing_off, …).
      consumers: () => server.consumers().map((c) => ({ stream: c.stream, group: c.group, state: c.state })),
      actor: 'dashboard',
      // Each action an operator takes here is logged, "(by dashboard)".
      log: (line) => this.logger.log(line),
    });
  }

  get admin(): RheoAdminOperations {
    if (!this.adminService) throw new RheoError('failed', 'RheoDashboardModule: used before the module was initialised');
    return this.adminService;
  }

  /** A page of the overview; its lags go into the chart's history. */
  async overview(page: { limit?: number; after?: string } = {}): Promise<Overview> {
    const overview = await this.admin.overview(page);
    this.history.record(overview);
    return overview;
  }

  lagHistory(): LagHistorySnapshot {
    return this.history.snapshot();
  }
}
