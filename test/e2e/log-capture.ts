import type { LoggerService } from '@nestjs/common';

/** One line the app logged, as a custom Nest logger receives it. */
export interface LogEntry {
  level: 'log' | 'error' | 'warn' | 'debug' | 'verbose' | 'fatal';
  context: string;
  /** The message; for an Error, its stack (what Nest's ConsoleLogger would print). */
  message: string;
}

function text(value: unknown): string {
  if (value instanceof Error) return value.stack ?? String(value);
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * Keeps every entry the app logs. Nest's `Logger` calls a custom logger with
 * `(message, ...params, context)`: the context is the last string; an error's
 * stack may come as the middle parameter, and is kept in the message.
 */
export class CapturingLogger implements LoggerService {
  readonly entries: LogEntry[] = [];

  private add(level: LogEntry['level'], message: unknown, params: unknown[]): void {
    const context = typeof params[params.length - 1] === 'string' ? (params[params.length - 1] as string) : '';
    const extra = params.slice(0, -1).filter((p) => typeof p === 'string');
    this.entries.push({ level, context, message: [text(message), ...extra].join('\n') });
  }

  log(message: unknown, ...params: unknown[]): void {
    this.add('log', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.add('error', message, params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.add('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.add('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]): void {
    this.add('verbose', message, params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.add('fatal', message, params);
  }

  /** `[Context] message` of every entry at `level` (all levels when absent). */
  lines(level?: LogEntry['level']): string[] {
    return this.entries.filter((e) => level === undefined || e.level === level).map((e) => `[${e.context}] ${e.message}`);
  }
}
