// @ts-check
// The overview: a page of streams, their groups with a sparkline each, and the
// pager between pages of streams.
/* global el, one, replaceRows, fmtTime, fmtAge, fmtRetention, chart, selected, select, refresh */
/* exported overviewAfter, renderOverview */

/** @type {string | null} the `after` of the page shown: the name of the previous page's last stream */
let overviewAfter = null;
/** @type {Array<string | null>} the `after` of each page before it */
const overviewPrevious = [];

/** @param {Overview} o */
function renderOverview(o) {
  const now = Date.parse(o.at);
  replaceRows(
    one('[data-testid=streams] tbody'),
    o.streams.map(function (s) {
      const row = el('tr', { 'data-testid': 'stream-row', 'data-stream': s.name }, [
        el('td', { text: s.name }),
        el('td', { class: 'n', text: s.partitions }),
        el('td', { class: 'n', 'data-testid': 'high-watermark', text: s.highWatermark }),
        el('td', { text: fmtRetention(s.retention) }),
        el('td', { class: 'n', text: s.groups.length }),
      ]);
      return row;
    }),
  );
  /** @type {GroupSummary[]} */
  const groups = [];
  o.streams.forEach(function (s) {
    s.groups.forEach(function (g) {
      groups.push(g);
    });
  });
  if (groups.length === 0) {
    replaceRows(one('[data-testid=groups] tbody'), [
      el('tr', {}, [el('td', { colspan: 9, class: 'muted', text: 'No consumer groups yet.' })]),
    ]);
  } else {
    replaceRows(
      one('[data-testid=groups] tbody'),
      groups.map(function (g) {
        const isSelected = selected && selected.stream === g.stream && selected.group === g.group;
        const state = el('td', { 'data-testid': 'consumer', class: g.consumer ? 'state-' + g.consumer : 'muted', text: g.consumer || '–' });
        if (g.paused) state.appendChild(el('span', { class: 'paused', 'data-testid': 'group-paused', text: 'paused' }));
        g.warnings.forEach(function (w) {
          state.appendChild(el('span', { class: 'warning', text: w }));
        });
        const open = function () {
          select(g.stream, g.group);
        };
        return el(
          'tr',
          { 'data-testid': 'group-row', 'data-stream': g.stream, 'data-group': g.group, class: isSelected ? 'selected' : null },
          [
            el('td', { text: g.stream }),
            el('td', { text: g.group }),
            el('td', { class: 'n ' + (g.lag > 0 ? 'lag-behind' : 'lag-zero'), 'data-testid': 'lag', text: g.lag }),
            el('td', { class: 'n', 'data-testid': 'inflight', text: g.inflight }),
            el('td', { class: 'n' + (g.deadLetters > 0 ? ' dead' : ''), 'data-testid': 'dead-letters', text: g.deadLetters }),
            el('td', { class: 'n', 'data-testid': 'oldest', text: fmtAge(g.oldestUnsettledAgeMs) }),
            state,
            el('td', {}, [chart(g.stream, g.group, now, false)]),
            el('td', {}, [el('button', { type: 'button', 'data-testid': 'open-group', onclick: open, text: 'dead letters & details' })]),
          ],
        );
      }),
    );
  }
  renderOverviewPager(o);
  one('[data-testid=updated]').textContent = 'updated ' + fmtTime(o.at);
}

/** @param {Overview} o */
function renderOverviewPager(o) {
  const parts = [];
  const range =
    o.streams.length === 0
      ? o.total === 0
        ? 'no streams yet'
        : 'no streams here, of ' + o.total
      : 'streams ' + (o.offset + 1) + '–' + (o.offset + o.streams.length) + ' of ' + o.total;
  parts.push(el('span', { class: 'muted', 'data-testid': 'overview-range', text: range }));
  if (overviewPrevious.length > 0) {
    parts.push(
      el('button', {
        type: 'button',
        'data-testid': 'overview-previous',
        text: 'Previous',
        onclick: function () {
          overviewAfter = overviewPrevious.pop() ?? null;
          refresh();
        },
      }),
    );
  }
  const next = o.next;
  if (next) {
    parts.push(
      el('button', {
        type: 'button',
        'data-testid': 'overview-next',
        text: 'Next',
        onclick: function () {
          overviewPrevious.push(overviewAfter);
          overviewAfter = next;
          refresh();
        },
      }),
    );
  }
  replaceRows(one('[data-testid=overview-pager]'), parts);
}
