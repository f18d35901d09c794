// Preload for a child process: makes every optional peer unresolvable, as on a
// machine where the user installed none of them (drivers, Terminus, and the
// telemetry peers: @opentelemetry/api and prom-client).
const Module = require('node:module');
const blocked = [
  'typeorm',
  'pg',
  'better-sqlite3',
  'ioredis',
  'mongodb',
  '@nestjs/terminus',
  '@nestjs/typeorm',
  '@opentelemetry/api',
  'prom-client',
];
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (blocked.some((b) => request === b || request.startsWith(b + '/'))) {
    const err = new Error(`Cannot find module '${request}' (blocked by test)`);
    err.code = 'MODULE_NOT_FOUND';
    throw err;
  }
  return resolve.call(this, request, ...rest);
};
