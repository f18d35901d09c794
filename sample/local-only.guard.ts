import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';

/**
 * The sample's guard for its dashboard: only requests from this machine. A real
 * app checks its own authentication here (a session, a token, a role).
 */
@Injectable()
export class LocalOnlyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    // Express and Fastify both expose the client's address as `ip`.
    const ip = context.switchToHttp().getRequest<{ ip?: string }>().ip ?? '';
    return ip === '127.0.0.1' || ip === '::1' || ip === '::ffff:127.0.0.1';
  }
}
