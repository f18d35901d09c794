// @ts-check
// The pause of the open group: what holds it back (since, until, by, reason) and,
// when the dashboard allows actions, the Pause form and the Resume button.
/* global el, replaceRows, fmtTime, act */
/* exported pauseControls, renderPause */

/** The lengths the form offers: a duration the server counts from the store's clock, or none (until resumed). */
const PAUSE_FOR = [
  ['', 'until resumed'],
  ['15m', 'for 15 min'],
  ['1h', 'for 1 h'],
  ['4h', 'for 4 h'],
  ['1d', 'for 1 day'],
];

/**
 * The Pause form and the Resume button (shown while the group is paused).
 * @returns {{ form: HTMLFormElement, resume: HTMLButtonElement }}
 */
function pauseControls() {
  const length = el(
    'select',
    { 'data-testid': 'pause-until' },
    PAUSE_FOR.map(function (o) {
      return el('option', { value: o[0], text: o[1] });
    }),
  );
  const reason = el('input', { type: 'text', 'data-testid': 'pause-reason', placeholder: 'reason', maxlength: 1000, autocomplete: 'off' });
  const by = el('input', { type: 'text', 'data-testid': 'pause-by', placeholder: 'by', maxlength: 256, autocomplete: 'off' });
  const form = el('form', { 'data-testid': 'pause-form' }, [
    el('span', { text: 'Pause' }),
    length,
    reason,
    by,
    el('button', { type: 'submit', 'data-testid': 'pause', text: 'Pause' }),
  ]);
  form.addEventListener('submit', function (ev) {
    ev.preventDefault();
    /** @type {Record<string, string | boolean>} */
    const payload = { confirm: true };
    if (length.value) payload.until = length.value;
    if (reason.value) payload.reason = reason.value;
    if (by.value) payload.by = by.value;
    act(
      function () {
        return 'Paused: no process claims the events of the group until it resumes';
      },
      '/pause',
      payload,
    );
  });
  const resume = el('button', { type: 'button', 'data-testid': 'resume', hidden: true, text: 'Resume' });
  resume.addEventListener('click', function () {
    act(
      /** @param {{ resumed: boolean }} r */
      function (r) {
        return r.resumed ? 'Resumed: the group claims again' : 'The group was not paused';
      },
      '/resume',
      { confirm: true },
    );
  });
  return { form: form, resume: resume };
}

/**
 * @param {string} iso
 * @param {string} testid
 */
function timeOf(iso, testid) {
  return el('time', { datetime: iso, 'data-testid': testid, text: fmtTime(iso) });
}

/**
 * The pause line of the open group (hidden when it claims as usual), and its Resume button's visibility.
 * @param {HTMLElement} box
 * @param {HTMLButtonElement | null} resume
 * @param {GroupSummary['paused']} p
 */
function renderPause(box, resume, p) {
  if (resume) resume.hidden = !p;
  if (!p) {
    replaceRows(box, []);
    box.hidden = true;
    return;
  }
  const parts = [el('strong', { text: 'Paused' }), ' since ', timeOf(p.pausedAt, 'pause-since'), ', '];
  if (p.until) parts.push('until ', timeOf(p.until, 'pause-until-time'));
  else parts.push(el('span', { 'data-testid': 'pause-until-time', text: 'until resumed' }));
  if (p.by !== null) parts.push(', by ', el('span', { 'data-testid': 'pause-by-name', text: p.by }));
  if (p.reason !== null) parts.push(': ', el('span', { 'data-testid': 'pause-reason-text', text: p.reason }));
  replaceRows(
    box,
    parts.map(function (c) {
      return typeof c === 'string' ? document.createTextNode(c) : c;
    }),
  );
  box.hidden = false;
}
