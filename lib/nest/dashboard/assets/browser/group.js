// @ts-check
// One group, opened from the overview: its figures, its flow limits, its pause and skips, lag chart,
// partitions and dead letters (paged), and the actions when the dashboard allows them.
/* global el, one, replaceRows, fmtTime, fmtAge, fmtSpan, preview, errorMessage, chart, lagWindowMs, groupPath, postJson, refresh,
   pauseControls, renderPause, waitingControls, renderSkipped */
/* exported selected, detail, select, renderGroup, renderFlow, renderDeadLetters, act */

const readOnly = document.body.dataset.readOnly === 'true';
const showPayloads = document.body.dataset.showPayloads === 'true';

/** @type {{ stream: string, group: string } | null} */
let selected = null;
/**
 * A group's parts of the page, and the dead letters' paging (`after` of the page shown, those before it).
 * `flow` shows the group's flow limits and what waits for its key; `pause` what holds the group back; `resume` is its button
 * (null on a read-only dashboard); `skipped` the group's skips.
 * @typedef {{ figures: HTMLElement, flow: HTMLElement, pause: HTMLElement, resume: HTMLButtonElement | null, skipped: HTMLElement, chart: HTMLElement,
 *   partitions: HTMLElement,
 *   dead: HTMLElement, pager: HTMLElement, notice: HTMLElement, after: string | null, previous: Array<string | null> }} GroupView
 */
/** @type {GroupView | null} the open group's */
let detail = null;

/**
 * @param {string} text
 * @param {boolean} failed
 */
function notice(text, failed) {
  if (!detail) return;
  detail.notice.textContent = text;
  detail.notice.className = 'notice' + (failed ? ' failed' : '');
  detail.notice.hidden = false;
}

/**
 * POST an action on the open group (or, `ofStream`, on its stream), tell how it went, refresh.
 * @param {(result: any) => string} what the notice for the answer
 * @param {string} path
 * @param {unknown} payload
 * @param {boolean} [ofStream] the route is the stream's (a delayed event's cancel reaches every group)
 */
async function act(what, path, payload, ofStream) {
  if (!selected) return;
  const target = ofStream ? '/streams/' + encodeURIComponent(selected.stream) : groupPath(selected.stream, selected.group);
  try {
    const result = await postJson(target + path, payload);
    notice(what(result), false);
  } catch (e) {
    notice(errorMessage(e), true);
  }
  await refresh();
}

/** @param {{ redriven: number }} r */
function redrove(r) {
  return 'Redrove ' + r.redriven + ' dead letter(s)';
}

/**
 * @param {string} group
 * @param {{ form: HTMLFormElement, resume: HTMLButtonElement }} pause
 * @param {{ forms: HTMLFormElement[] }} waiting
 */
function actionForms(group, pause, waiting) {
  /** @type {number | null} */
  let confirmAll = null;
  const redriveAll = el('button', { type: 'button', class: 'danger', 'data-testid': 'redrive-all', text: 'Redrive all' });
  redriveAll.addEventListener('click', function () {
    // Two clicks: the first arms it for 5 s.
    if (!confirmAll) {
      redriveAll.textContent = 'Click again to redrive every dead letter';
      confirmAll = setTimeout(function () {
        confirmAll = null;
        redriveAll.textContent = 'Redrive all';
      }, 5000);
      return;
    }
    clearTimeout(confirmAll);
    confirmAll = null;
    redriveAll.textContent = 'Redrive all';
    act(redrove, '/redrive', { all: true, confirm: true });
  });

  const mode = el('select', { 'data-testid': 'replay-mode' }, [
    el('option', { value: 'sequence', text: 'after sequence' }),
    el('option', { value: 'time', text: 'from time' }),
  ]);
  const at = el('input', { type: 'number', min: 0, step: 1, required: true, 'data-testid': 'replay-at', placeholder: 'sequence' });
  mode.addEventListener('change', function () {
    at.value = '';
    if (mode.value === 'time') {
      at.type = 'datetime-local';
      at.step = '1';
      at.placeholder = 'time';
    } else {
      at.type = 'number';
      at.step = '1';
      at.placeholder = 'sequence';
    }
  });
  const replay = el('form', { 'data-testid': 'replay-form' }, [
    el('span', { text: 'Replay' }),
    mode,
    at,
    el('button', { type: 'submit', text: 'Replay' }),
  ]);
  replay.addEventListener('submit', function (ev) {
    ev.preventDefault();
    let payload;
    if (mode.value === 'time') {
      const d = new Date(at.value);
      if (isNaN(d.getTime())) return notice('Pick a time to replay from', true);
      payload = { from: d.toISOString() };
    } else payload = { afterSequence: Number(at.value) };
    act(
      /** @param {{ replayed: number }} r */
      function (r) {
        return 'Replayed: ' + r.replayed + ' event(s) re-opened';
      },
      '/replay',
      payload,
    );
  });

  const start = el('select', { 'data-testid': 'reset-start' }, [
    el('option', { value: 'beginning', text: 'from the beginning' }),
    el('option', { value: 'end', text: 'from the end' }),
  ]);
  const typed = el('input', {
    type: 'text',
    'data-testid': 'reset-confirm',
    placeholder: 'type "' + group + '" to confirm',
    autocomplete: 'off',
  });
  const resetButton = el('button', { type: 'submit', class: 'danger', 'data-testid': 'reset', disabled: true, text: 'Reset group' });
  typed.addEventListener('input', function () {
    resetButton.disabled = typed.value !== group;
  });
  const reset = el('form', { 'data-testid': 'reset-form' }, [el('span', { text: 'Reset' }), start, typed, resetButton]);
  reset.addEventListener('submit', function (ev) {
    ev.preventDefault();
    if (typed.value !== group) return;
    const confirmText = typed.value;
    typed.value = '';
    resetButton.disabled = true;
    act(
      function () {
        return 'Reset: every delivery of ' + group + ' forgotten';
      },
      '/reset',
      { start: start.value, confirm: confirmText },
    );
  });
  return el('div', {}, [
    el('div', { class: 'actions', 'data-testid': 'actions' }, [redriveAll, replay, reset, pause.form, pause.resume]),
    el('div', { class: 'actions', 'data-testid': 'waiting-actions' }, waiting.forms),
  ]);
}

/**
 * Open a group: build its part of the page, then refresh to fill it.
 * @param {string} stream
 * @param {string} group
 */
function select(stream, group) {
  selected = { stream: stream, group: group };
  const section = one('[data-testid=detail]');
  while (section.firstChild) section.removeChild(section.firstChild);
  const figures = el('p', { 'data-testid': 'group-figures', class: 'muted' });
  const flowBox = el('p', { 'data-testid': 'flow-state', class: 'muted', hidden: true });
  const pauseBox = el('p', { 'data-testid': 'pause-state', class: 'paused', hidden: true });
  const skippedBox = el('p', { 'data-testid': 'skip-state', class: 'muted', hidden: true });
  const pause = readOnly ? null : pauseControls();
  const waiting = readOnly ? null : waitingControls();
  const chartBox = el('div');
  const partitions = el('tbody');
  const dead = el('tbody');
  const pager = el('div');
  const noticeBox = el('div', { class: 'notice', role: 'status', 'data-testid': 'notice', hidden: true });
  const headCells = ['event id', 'partition', 'sequence', 'attempt', 'dead-lettered at', 'type', 'key', 'reason'];
  if (showPayloads) headCells.push('payload');
  if (!readOnly) headCells.push('');
  section.appendChild(el('h2', { text: stream + ' / ' + group }));
  section.appendChild(figures);
  section.appendChild(flowBox);
  section.appendChild(pauseBox);
  section.appendChild(skippedBox);
  section.appendChild(noticeBox);
  // A skip's or reschedule's answer per id, right under the notice that sums it up.
  if (waiting) section.appendChild(waiting.results);
  if (pause && waiting) section.appendChild(actionForms(group, pause, waiting));
  section.appendChild(el('h3', { text: 'Lag (up to the last ' + fmtSpan(lagWindowMs) + ')' }));
  section.appendChild(chartBox);
  section.appendChild(el('h3', { text: 'Partitions' }));
  section.appendChild(
    el('table', { 'data-testid': 'partitions' }, [
      el('thead', {}, [
        el('tr', {}, [
          el('th', { text: 'partition' }),
          el('th', { class: 'n', text: 'frontier' }),
          el('th', { class: 'n', text: 'high watermark' }),
          el('th', { class: 'n', text: 'lag' }),
        ]),
      ]),
      partitions,
    ]),
  );
  section.appendChild(el('h3', { text: 'Dead letters' }));
  section.appendChild(
    el('table', { 'data-testid': 'dead-letter-table' }, [
      el('thead', {}, [
        el(
          'tr',
          {},
          headCells.map(function (t) {
            return el('th', { text: t });
          }),
        ),
      ]),
      dead,
    ]),
  );
  section.appendChild(pager);
  section.hidden = false;
  detail = {
    figures: figures,
    flow: flowBox,
    pause: pauseBox,
    resume: pause ? pause.resume : null,
    skipped: skippedBox,
    chart: chartBox,
    partitions: partitions,
    dead: dead,
    pager: pager,
    notice: noticeBox,
    after: null,
    previous: [],
  };
  refresh();
}

/**
 * @param {GroupView} view
 * @param {GroupSummary} g
 * @param {number} now
 */
function renderGroup(view, g, now) {
  view.figures.textContent =
    'lag ' +
    g.lag +
    ' · inflight ' +
    g.inflight +
    ' · dead letters ' +
    g.deadLetters +
    ' · oldest unsettled ' +
    fmtAge(g.oldestUnsettledAgeMs) +
    ' · max attempts ' +
    g.maxAttempts +
    ' · retry ' +
    g.retry.initialMs +
    ' ms ×' +
    g.retry.factor +
    ' up to ' +
    g.retry.maxMs +
    ' ms' +
    ' · ordering ' +
    g.ordering +
    ' · skipped ' +
    g.skipped.count +
    (g.consumer ? ' · consumer ' + g.consumer : '');
  renderFlow(view.flow, g);
  renderPause(view.pause, view.resume, g.paused);
  renderSkipped(view.skipped, g.skipped);
  replaceRows(view.chart, [chart(g.stream, g.group, now, true)]);
  replaceRows(
    view.partitions,
    g.partitions.map(function (p) {
      return el('tr', {}, [
        el('td', { text: p.partition }),
        el('td', { class: 'n', text: p.frontier }),
        el('td', { class: 'n', text: p.highWatermark }),
        el('td', { class: 'n', text: p.lag }),
      ]);
    }),
  );
}

/**
 * The group's flow limits and the events waiting for their key, in one line; hidden for a group with
 * neither (its claims are limited by nothing but each consumer's own demand).
 * @param {HTMLElement} box
 * @param {GroupSummary} g
 */
function renderFlow(box, g) {
  const parts = [];
  if (g.keyConcurrency !== null) parts.push('key concurrency ' + g.keyConcurrency);
  if (g.groupConcurrency !== null) parts.push('group concurrency ' + g.groupConcurrency);
  if (g.rateLimit !== null) parts.push('rate limit ' + g.rateLimit.max + ' per ' + g.rateLimit.perMs + ' ms');
  const keyed = g.ordering === 'key' || g.keyConcurrency !== null;
  if (keyed || g.waitingForKey > 0) parts.push(g.waitingForKey + ' waiting for their key');
  box.textContent = parts.length === 0 ? '' : 'Flow limits: ' + parts.join(' · ');
  box.hidden = parts.length === 0;
}

/**
 * @param {GroupView} view
 * @param {DeadLetterPage} page
 */
function renderDeadLetters(view, page) {
  const rows = page.items.map(function (d) {
    const cells = [
      el('td', { class: 'mono', 'data-testid': 'event-id', text: d.eventId }),
      el('td', { class: 'n', text: d.partition }),
      el('td', { class: 'n', text: d.sequence }),
      el('td', { class: 'n', 'data-testid': 'attempt', text: d.attempt }),
      el('td', { text: fmtTime(d.deadLetteredAt) }),
      el('td', { text: d.type === null ? '–' : d.type }),
      el('td', { text: d.key === null ? '–' : d.key }),
      el('td', { 'data-testid': 'reason', text: d.reason }),
    ];
    if (showPayloads)
      cells.push(el('td', { class: 'mono payload', 'data-testid': 'payload', title: preview(d.payload), text: preview(d.payload) }));
    if (!readOnly) {
      cells.push(
        el('td', {}, [
          el('button', {
            type: 'button',
            'data-testid': 'redrive-one',
            text: 'Redrive',
            onclick: function () {
              act(redrove, '/redrive', { eventIds: [d.eventId] });
            },
          }),
        ]),
      );
    }
    return el('tr', { 'data-testid': 'dead-letter-row', 'data-event-id': d.eventId }, cells);
  });
  if (rows.length === 0)
    rows.push(el('tr', {}, [el('td', { colspan: 10, class: 'muted', 'data-testid': 'no-dead-letters', text: 'No dead letters.' })]));
  replaceRows(view.dead, rows);
  const buttons = [];
  if (view.previous.length > 0) {
    buttons.push(
      el('button', {
        type: 'button',
        text: 'Newer',
        onclick: function () {
          view.after = view.previous.pop() ?? null;
          refresh();
        },
      }),
    );
  }
  const next = page.next;
  if (next) {
    buttons.push(
      el('button', {
        type: 'button',
        text: 'Older',
        onclick: function () {
          view.previous.push(view.after);
          view.after = next;
          refresh();
        },
      }),
    );
  }
  replaceRows(view.pager, buttons);
}
