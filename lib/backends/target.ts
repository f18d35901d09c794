// How a backend names where its data lives in the start-up log (Backend.describe):
// host, port and database from a connection URL or options, never the user name
// or password a URL may carry.

/** `host:port` and the database (a URL's path) of a connection URL, without credentials; null when it does not parse. */
export function urlTarget(url: string): { host: string; database?: string } | null {
  try {
    const u = new URL(url);
    const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
    return { host: u.port ? `${u.hostname}:${u.port}` : u.hostname, database: database === '' ? undefined : database };
  } catch {
    return null;
  }
}

/** `host:port` from separate settings; `fallback` fills what is missing. */
export function hostPort(host: unknown, port: unknown, fallback: { host: string; port: number }): string {
  const h = typeof host === 'string' && host !== '' ? host : fallback.host;
  const p = typeof port === 'number' || typeof port === 'string' ? port : fallback.port;
  return `${h}:${p}`;
}
