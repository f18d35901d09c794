#!/usr/bin/env node
// The `rheo` bin. Sets the exit code and lets the process end by itself: every
// command closes its store, so nothing is left to keep it alive (a forced exit
// could cut stdout short when it is a pipe).
import { run } from './run';

// Node's default printer adds a "--trace-warnings" hint meant for developers; an
// operator gets one line per warning (a Redis store that can lose data, say), once.
const warned = new Set<string>();
process.removeAllListeners('warning');
process.on('warning', (w) => {
  if (!warned.has(w.message)) process.stderr.write(`warning: ${w.message}\n`);
  warned.add(w.message);
});

// A reader that goes away (`rheo tail s | head`) is a normal end, not a crash:
// later writes are dropped, and the command still closes its store.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
});

void run(process.argv, {
  out: (text) => {
    if (!process.stdout.destroyed) process.stdout.write(text);
  },
  err: (text) => process.stderr.write(text),
  errIsTTY: process.stderr.isTTY === true,
}).then((code) => {
  process.exitCode = code;
});
