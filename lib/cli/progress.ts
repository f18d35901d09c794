// Progress of a long operation (a large redrive or replay, a trim, a follow),
// drawn on stderr and only when stderr is a terminal: stdout stays the result
// alone, and a script or a log file never receives carriage returns.

/** A status line: `update` its text; `done` erases it. */
export interface Progress {
  update(text: string): void;
  done(): void;
}

const NONE: Progress = { update: () => undefined, done: () => undefined };

/**
 * A status line `<label> <text> (<n>s)` redrawn every second, first drawn after
 * one second, so an operation that finishes at once prints nothing.
 */
export function progress(stderr: { isTTY?: boolean; write(text: string): unknown }, label: string): Progress {
  if (!stderr.isTTY) return NONE;
  const started = Date.now();
  let text = '';
  let drawn = false;
  const draw = () => {
    const seconds = Math.round((Date.now() - started) / 1000);
    stderr.write(`\r\x1b[K${label}${text ? ` ${text}` : ''} (${seconds}s)`);
    drawn = true;
  };
  const timer = setInterval(draw, 1000);
  timer.unref(); // never what keeps the process alive
  return {
    update(next) {
      text = next;
      if (drawn) draw();
    },
    done() {
      clearInterval(timer);
      if (drawn) stderr.write('\r\x1b[K');
    },
  };
}
