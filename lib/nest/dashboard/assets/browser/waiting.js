// @ts-check
// An operator's hand on deliveries waiting in the open group (docs/adr/048): the
// Skip and Reschedule forms, the answer per event id (done, or left alone and why:
// a lease in flight names when it expires), the Cancel delayed form, and the
// group's skips (how many, the last one's reason).
/* global el, replaceRows, fmtTime, act */
/* exported waitingControls, renderSkipped */

/** @typedef {import('../../../../admin/types').WaitingResultSummary} WaitingResultSummary */

/**
 * The ids as typed: one a line or comma separated, blanks dropped. Repeats and
 * malformed ids are the server's to refuse, naming the one.
 * @param {string} text
 * @returns {string[]}
 */
function parseIds(text) {
  return text
    .split(/[\s,]+/)
    .map(function (id) {
      return id.trim();
    })
    .filter(function (id) {
      return id.length > 0;
    });
}

/**
 * @param {string} what
 * @param {string} testid
 */
function idsBox(what, testid) {
  return el('textarea', {
    'data-testid': testid,
    rows: 2,
    cols: 40,
    placeholder: 'event ids to ' + what + ', one a line or comma separated',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
  });
}

/**
 * The answer of a skip or a reschedule, one line per id, into `box`; the notice's text.
 * @param {HTMLElement} box
 * @param {string} verb what was done, e.g. `skipped`
 * @param {WaitingResultSummary} s
 */
function showResults(box, verb, s) {
  replaceRows(
    box,
    s.results.map(function (r) {
      const line = r.ok ? verb + ' ' + r.eventId : 'left ' + r.eventId + ': ' + r.code + ': ' + r.message;
      return el('li', {
        'data-testid': 'waiting-result',
        'data-event-id': r.eventId,
        'data-ok': r.ok ? 'true' : 'false',
        'data-code': r.ok ? null : r.code,
        class: r.ok ? null : 'failed',
        text: line,
      });
    }),
  );
  box.hidden = s.results.length === 0;
  const left = s.results.length - s.done;
  return verb[0].toUpperCase() + verb.slice(1) + ' ' + s.done + ' of ' + s.results.length + (left > 0 ? ': ' + left + ' left alone' : '');
}

/**
 * The Skip, Reschedule and Cancel delayed forms, and the list the first two answer in.
 * @returns {{ forms: HTMLFormElement[], results: HTMLElement }}
 */
function waitingControls() {
  const results = el('ul', { 'data-testid': 'waiting-results', class: 'results', hidden: true });
  /** A new action's answer replaces the last one's; a refused request (400, 428) leaves the list empty. */
  function cleared() {
    replaceRows(results, []);
    results.hidden = true;
  }

  const skipIds = idsBox('skip', 'skip-ids');
  const skipReason = el('input', {
    type: 'text',
    'data-testid': 'skip-reason',
    placeholder: 'reason',
    maxlength: 1000,
    autocomplete: 'off',
  });
  const skip = el('form', { 'data-testid': 'skip-form' }, [
    el('span', { text: 'Skip' }),
    skipIds,
    skipReason,
    el('button', { type: 'submit', 'data-testid': 'skip', text: 'Skip' }),
  ]);
  skip.addEventListener('submit', function (ev) {
    ev.preventDefault();
    cleared();
    /** @type {{ eventIds: string[], confirm: true, reason?: string }} */
    const payload = { eventIds: parseIds(skipIds.value), confirm: true };
    if (skipReason.value) payload.reason = skipReason.value;
    act(
      /** @param {WaitingResultSummary} s */
      function (s) {
        return showResults(results, 'skipped', s);
      },
      '/skip',
      payload,
    );
  });

  const moveIds = idsBox('reschedule', 'reschedule-ids');
  const mode = el('select', { 'data-testid': 'reschedule-mode' }, [
    el('option', { value: 'delay', text: 'in (seconds)' }),
    el('option', { value: 'time', text: 'at time' }),
  ]);
  const when = el('input', { type: 'number', min: 0, step: 1, required: true, 'data-testid': 'reschedule-when', placeholder: 'seconds' });
  mode.addEventListener('change', function () {
    when.value = '';
    when.type = mode.value === 'time' ? 'datetime-local' : 'number';
    when.step = '1';
    when.placeholder = mode.value === 'time' ? 'time' : 'seconds';
  });
  const reschedule = el('form', { 'data-testid': 'reschedule-form' }, [
    el('span', { text: 'Reschedule' }),
    moveIds,
    mode,
    when,
    el('button', { type: 'submit', 'data-testid': 'reschedule', text: 'Reschedule' }),
  ]);
  reschedule.addEventListener('submit', function (ev) {
    ev.preventDefault();
    cleared();
    /** @type {{ eventIds: string[], confirm: true, deliverAt?: string, delayMs?: number }} */
    const payload = { eventIds: parseIds(moveIds.value), confirm: true };
    if (mode.value === 'time') {
      // datetime-local is the browser's local time; the server gets it as UTC.
      const d = new Date(when.value);
      if (isNaN(d.getTime())) return;
      payload.deliverAt = d.toISOString();
    } else payload.delayMs = Math.round(Number(when.value) * 1000);
    act(
      /** @param {WaitingResultSummary} s */
      function (s) {
        return showResults(results, 'rescheduled', s);
      },
      '/reschedule',
      payload,
    );
  });

  const cancelId = el('input', { type: 'text', 'data-testid': 'cancel-delayed-id', placeholder: 'delayed event id', required: true });
  const cancelReason = el('input', {
    type: 'text',
    'data-testid': 'cancel-delayed-reason',
    placeholder: 'reason',
    maxlength: 1000,
    autocomplete: 'off',
  });
  const cancel = el('form', { 'data-testid': 'cancel-delayed-form' }, [
    el('span', { text: 'Cancel delayed (every group)' }),
    cancelId,
    cancelReason,
    el('button', { type: 'submit', class: 'danger', 'data-testid': 'cancel-delayed', text: 'Cancel delayed' }),
  ]);
  cancel.addEventListener('submit', function (ev) {
    ev.preventDefault();
    cleared();
    /** @type {{ eventId: string, confirm: true, reason?: string }} */
    const payload = { eventId: cancelId.value.trim(), confirm: true };
    if (cancelReason.value) payload.reason = cancelReason.value;
    act(
      /** @param {{ groups: number }} r */
      function (r) {
        return 'Cancelled ' + payload.eventId + ': ' + r.groups + ' group(s) had it still to run';
      },
      '/cancel-delayed',
      payload,
      true,
    );
  });
  return { forms: [skip, reschedule, cancel], results: results };
}

/**
 * The group's skips: how many, and the last one's time and reason (hidden while none).
 * @param {HTMLElement} box
 * @param {import('../../../../admin/types').GroupSummary['skipped']} s
 */
function renderSkipped(box, s) {
  if (s.count === 0) {
    replaceRows(box, []);
    box.hidden = true;
    return;
  }
  /** @type {Node[]} */
  const parts = [
    document.createTextNode('Skipped '),
    el('span', { 'data-testid': 'skipped-count', text: s.count }),
    document.createTextNode(' delivery(ies)'),
  ];
  if (s.lastAt !== null) {
    parts.push(
      document.createTextNode(', the last at '),
      el('time', { datetime: s.lastAt, 'data-testid': 'skipped-at', text: fmtTime(s.lastAt) }),
    );
  }
  if (s.lastReason !== null) parts.push(document.createTextNode(': '), el('span', { 'data-testid': 'skipped-reason', text: s.lastReason }));
  replaceRows(box, parts);
  box.hidden = false;
}
