// The page's script, served at <path>/assets/dashboard.js. Plain browser
// JavaScript kept as a string (the package compiles without the DOM typings, and
// the build is plain tsc): no framework, no chart library, no template literals
// inside (this is one). Every value from the API reaches the page through
// textContent or an SVG attribute, never as HTML. The browser tests drive it.
export const DASHBOARD_SCRIPT = String.raw`(function () {
  'use strict';
  var body = document.body;
  var base = body.dataset.base;
  var readOnly = body.dataset.readOnly === 'true';
  var showPayloads = body.dataset.showPayloads === 'true';
  var REFRESH_MS = 2000;
  var PAGE = 50;
  // The overview is read a page of streams at a time (each with its groups): a store of many
  // streams costs each 2 s refresh one page of reads, not all of them.
  var STREAM_PAGE = 50;
  var overviewAfter = null;
  var overviewPrevious = [];
  var windowMs = 10 * 60000;
  var history = new Map();
  var selected = null;
  var detail = null;
  var busy = false;
  var again = false;

  // ---- HTTP ---------------------------------------------------------------
  function groupPath(stream, group) {
    return '/streams/' + encodeURIComponent(stream) + '/groups/' + encodeURIComponent(group);
  }
  async function failure(res) {
    var text = res.status + ' ' + res.statusText;
    try {
      var b = await res.json();
      if (b && b.message) text = res.status + ': ' + (Array.isArray(b.message) ? b.message.join(', ') : b.message);
    } catch (e) {}
    return new Error(text);
  }
  async function getJson(path) {
    var res = await fetch(base + '/api' + path, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
    if (!res.ok) throw await failure(res);
    return res.json();
  }
  // Actions carry the header the server requires of every action POST (no CSRF by a plain form).
  async function postJson(path, payload) {
    var res = await fetch(base + '/api' + path, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'x-rheo-dashboard': '1' },
      body: JSON.stringify(payload),
    });
    if (!res.ok) throw await failure(res);
    return res.json();
  }

  // ---- DOM helpers ----------------------------------------------------------
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (attrs[k] === undefined || attrs[k] === null || attrs[k] === false) continue;
      if (k === 'text') node.textContent = String(attrs[k]);
      else if (k === 'onclick') node.addEventListener('click', attrs[k]);
      else node.setAttribute(k, attrs[k] === true ? '' : String(attrs[k]));
    }
    (children || []).forEach(function (c) { if (c) node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return node;
  }
  function replaceRows(tbody, rows) {
    while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
    rows.forEach(function (r) { tbody.appendChild(r); });
  }
  function pad(n) { return n < 10 ? '0' + n : String(n); }
  function fmtTime(iso) {
    var d = new Date(iso);
    if (isNaN(d.getTime())) return String(iso);
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' + pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }
  function fmtAge(ms) {
    if (ms === null || ms === undefined) return '–';
    if (ms < 1000) return ms + ' ms';
    if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
    if (ms < 3600000) return Math.floor(ms / 60000) + ' min ' + Math.floor((ms % 60000) / 1000) + ' s';
    if (ms < 86400000) return Math.floor(ms / 3600000) + ' h ' + Math.floor((ms % 3600000) / 60000) + ' min';
    return Math.floor(ms / 86400000) + ' d ' + Math.floor((ms % 86400000) / 3600000) + ' h';
  }
  function fmtRetention(r) {
    if (!r) return '–';
    var parts = [];
    for (var k in r) parts.push(k + ' ' + r[k]);
    return parts.join(', ');
  }
  function keyOf(stream, group) { return JSON.stringify([stream, group]); }
  function showError(message) {
    var box = document.querySelector('[data-testid=error]');
    box.textContent = message || '';
    box.hidden = !message;
  }

  // ---- lag history and charts -------------------------------------------------
  function remember(stream, group, at, lag) {
    var key = keyOf(stream, group);
    var points = history.get(key);
    if (!points) history.set(key, (points = []));
    var last = points[points.length - 1];
    if (last && at - last[0] < 1000) last[1] = lag;
    else points.push([at, lag]);
    while (points.length && points[0][0] < at - windowMs) points.shift();
  }
  var SVG = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs) {
    var node = document.createElementNS(SVG, tag);
    for (var k in attrs) node.setAttribute(k, String(attrs[k]));
    return node;
  }
  function fmtSpan(ms) { return ms >= 60000 ? Math.round(ms / 60000) + ' min' : Math.round(ms / 1000) + ' s'; }
  // A line of the group's lag up to 'now', over what the history holds (at least 30 s,
  // at most the window), so a just-opened page draws a readable line; axes
  // and labels when 'big'.
  function chart(stream, group, now, big) {
    var w = big ? 640 : 160, h = big ? 160 : 32;
    var left = big ? 40 : 0, bottom = big ? 18 : 0, top = big ? 8 : 2;
    var points = (history.get(keyOf(stream, group)) || []).filter(function (p) { return p[0] >= now - windowMs && p[0] <= now; });
    var span = Math.min(windowMs, Math.max(30000, points.length ? now - points[0][0] : 0));
    var max = 1;
    points.forEach(function (p) { if (p[1] > max) max = p[1]; });
    var root = svg('svg', { class: 'chart', viewBox: '0 0 ' + w + ' ' + h, width: w, height: h, role: 'img' });
    root.setAttribute('data-testid', big ? 'lag-chart' : 'lag-sparkline');
    root.setAttribute('aria-label', 'lag of ' + group + ' over the last ' + fmtSpan(span) + ', at most ' + max);
    var x = function (t) { return left + ((t - (now - span)) / span) * (w - left - 1); };
    var y = function (v) { return top + (1 - v / max) * (h - top - bottom - 1); };
    root.appendChild(svg('line', { class: 'axis', x1: left, y1: h - bottom - 0.5, x2: w, y2: h - bottom - 0.5 }));
    if (big) {
      root.appendChild(svg('line', { class: 'axis', x1: left, y1: top, x2: left, y2: h - bottom }));
      var label = function (text, lx, ly, anchor) {
        var t = svg('text', { x: lx, y: ly, 'text-anchor': anchor });
        t.textContent = text;
        root.appendChild(t);
      };
      label(String(max), left - 4, top + 8, 'end');
      label('0', left - 4, h - bottom, 'end');
      label('-' + fmtSpan(span), left, h - 4, 'start');
      label('now', w - 2, h - 4, 'end');
    }
    if (points.length > 0) {
      var line = points.map(function (p) { return x(p[0]).toFixed(1) + ',' + y(p[1]).toFixed(1); });
      // The last lag read holds until now.
      line.push(x(now).toFixed(1) + ',' + y(points[points.length - 1][1]).toFixed(1));
      var first = line[0].split(',')[0], last = line[line.length - 1].split(',')[0];
      var floor = (h - bottom - 1).toFixed(1);
      root.appendChild(svg('polygon', { class: 'area', points: first + ',' + floor + ' ' + line.join(' ') + ' ' + last + ',' + floor }));
      root.appendChild(svg('polyline', { class: 'line', points: line.join(' ') }));
    }
    return root;
  }

  // ---- overview -------------------------------------------------------------------
  function renderOverview(o) {
    var now = Date.parse(o.at);
    replaceRows(
      document.querySelector('[data-testid=streams] tbody'),
      o.streams.map(function (s) {
        var row = el('tr', { 'data-testid': 'stream-row', 'data-stream': s.name }, [
          el('td', { text: s.name }),
          el('td', { class: 'n', text: s.partitions }),
          el('td', { class: 'n', 'data-testid': 'high-watermark', text: s.highWatermark }),
          el('td', { text: fmtRetention(s.retention) }),
          el('td', { class: 'n', text: s.groups.length }),
        ]);
        return row;
      }),
    );
    var groups = [];
    o.streams.forEach(function (s) { s.groups.forEach(function (g) { groups.push(g); }); });
    if (groups.length === 0) {
      replaceRows(document.querySelector('[data-testid=groups] tbody'), [el('tr', {}, [el('td', { colspan: 9, class: 'muted', text: 'No consumer groups yet.' })])]);
    } else {
      replaceRows(
        document.querySelector('[data-testid=groups] tbody'),
        groups.map(function (g) {
          var isSelected = selected && selected.stream === g.stream && selected.group === g.group;
          var state = el('td', { 'data-testid': 'consumer', class: g.consumer ? 'state-' + g.consumer : 'muted', text: g.consumer || '–' });
          g.warnings.forEach(function (w) { state.appendChild(el('span', { class: 'warning', text: w })); });
          var open = function () { select(g.stream, g.group); };
          return el('tr', { 'data-testid': 'group-row', 'data-stream': g.stream, 'data-group': g.group, class: isSelected ? 'selected' : null }, [
            el('td', { text: g.stream }),
            el('td', { text: g.group }),
            el('td', { class: 'n ' + (g.lag > 0 ? 'lag-behind' : 'lag-zero'), 'data-testid': 'lag', text: g.lag }),
            el('td', { class: 'n', 'data-testid': 'inflight', text: g.inflight }),
            el('td', { class: 'n' + (g.deadLetters > 0 ? ' dead' : ''), 'data-testid': 'dead-letters', text: g.deadLetters }),
            el('td', { class: 'n', 'data-testid': 'oldest', text: fmtAge(g.oldestUnsettledAgeMs) }),
            state,
            el('td', {}, [chart(g.stream, g.group, now, false)]),
            el('td', {}, [el('button', { type: 'button', 'data-testid': 'open-group', onclick: open, text: 'dead letters & details' })]),
          ]);
        }),
      );
    }
    renderOverviewPager(o);
    document.querySelector('[data-testid=updated]').textContent = 'updated ' + fmtTime(o.at);
  }
  function renderOverviewPager(o) {
    var parts = [];
    var range = o.streams.length === 0
      ? (o.total === 0 ? 'no streams yet' : 'no streams here, of ' + o.total)
      : 'streams ' + (o.offset + 1) + '–' + (o.offset + o.streams.length) + ' of ' + o.total;
    parts.push(el('span', { class: 'muted', 'data-testid': 'overview-range', text: range }));
    if (overviewPrevious.length > 0) {
      parts.push(el('button', { type: 'button', 'data-testid': 'overview-previous', text: 'Previous', onclick: function () {
        overviewAfter = overviewPrevious.pop();
        refresh();
      } }));
    }
    if (o.next) {
      parts.push(el('button', { type: 'button', 'data-testid': 'overview-next', text: 'Next', onclick: function () {
        overviewPrevious.push(overviewAfter);
        overviewAfter = o.next;
        refresh();
      } }));
    }
    replaceRows(document.querySelector('[data-testid=overview-pager]'), parts);
  }

  // ---- one group ----------------------------------------------------------------
  function notice(text, failed) {
    if (!detail) return;
    detail.notice.textContent = text;
    detail.notice.className = 'notice' + (failed ? ' failed' : '');
    detail.notice.hidden = false;
  }
  async function act(what, path, payload) {
    try {
      var result = await postJson(groupPath(selected.stream, selected.group) + path, payload);
      notice(what(result), false);
    } catch (e) {
      notice(e.message, true);
    }
    await refresh();
  }
  function actionForms(stream, group) {
    var confirmAll = null;
    var redriveAll = el('button', { type: 'button', class: 'danger', 'data-testid': 'redrive-all', text: 'Redrive all' });
    redriveAll.addEventListener('click', function () {
      // Two clicks: the first arms it for 5 s.
      if (!confirmAll) {
        redriveAll.textContent = 'Click again to redrive every dead letter';
        confirmAll = setTimeout(function () { confirmAll = null; redriveAll.textContent = 'Redrive all'; }, 5000);
        return;
      }
      clearTimeout(confirmAll);
      confirmAll = null;
      redriveAll.textContent = 'Redrive all';
      act(function (r) { return 'Redrove ' + r.redriven + ' dead letter(s)'; }, '/redrive', { all: true, confirm: true });
    });

    var mode = el('select', { 'data-testid': 'replay-mode' }, [el('option', { value: 'sequence', text: 'after sequence' }), el('option', { value: 'time', text: 'from time' })]);
    var at = el('input', { type: 'number', min: 0, step: 1, required: true, 'data-testid': 'replay-at', placeholder: 'sequence' });
    mode.addEventListener('change', function () {
      at.value = '';
      if (mode.value === 'time') { at.type = 'datetime-local'; at.step = '1'; at.placeholder = 'time'; }
      else { at.type = 'number'; at.step = '1'; at.placeholder = 'sequence'; }
    });
    var replay = el('form', { 'data-testid': 'replay-form' }, [el('span', { text: 'Replay' }), mode, at, el('button', { type: 'submit', text: 'Replay' })]);
    replay.addEventListener('submit', function (ev) {
      ev.preventDefault();
      var payload;
      if (mode.value === 'time') {
        var d = new Date(at.value);
        if (isNaN(d.getTime())) return notice('Pick a time to replay from', true);
        payload = { from: d.toISOString() };
      } else payload = { afterSequence: Number(at.value) };
      act(function (r) { return 'Replayed: ' + r.replayed + ' event(s) re-opened'; }, '/replay', payload);
    });

    var start = el('select', { 'data-testid': 'reset-start' }, [el('option', { value: 'beginning', text: 'from the beginning' }), el('option', { value: 'end', text: 'from the end' })]);
    var typed = el('input', { type: 'text', 'data-testid': 'reset-confirm', placeholder: 'type "' + group + '" to confirm', autocomplete: 'off' });
    var resetButton = el('button', { type: 'submit', class: 'danger', 'data-testid': 'reset', disabled: true, text: 'Reset group' });
    typed.addEventListener('input', function () { resetButton.disabled = typed.value !== group; });
    var reset = el('form', { 'data-testid': 'reset-form' }, [el('span', { text: 'Reset' }), start, typed, resetButton]);
    reset.addEventListener('submit', function (ev) {
      ev.preventDefault();
      if (typed.value !== group) return;
      var confirmText = typed.value;
      typed.value = '';
      resetButton.disabled = true;
      act(function () { return 'Reset: every delivery of ' + group + ' forgotten'; }, '/reset', { start: start.value, confirm: confirmText });
    });
    return el('div', { class: 'actions', 'data-testid': 'actions' }, [redriveAll, replay, reset]);
  }
  function select(stream, group) {
    selected = { stream: stream, group: group };
    var section = document.querySelector('[data-testid=detail]');
    while (section.firstChild) section.removeChild(section.firstChild);
    var figures = el('p', { 'data-testid': 'group-figures', class: 'muted' });
    var chartBox = el('div');
    var partitions = el('tbody');
    var dead = el('tbody');
    var pager = el('div');
    var noticeBox = el('div', { class: 'notice', role: 'status', 'data-testid': 'notice', hidden: true });
    var headCells = ['event id', 'partition', 'sequence', 'attempt', 'dead-lettered at', 'type', 'key', 'reason'];
    if (showPayloads) headCells.push('payload');
    if (!readOnly) headCells.push('');
    section.appendChild(el('h2', { text: stream + ' / ' + group }));
    section.appendChild(figures);
    section.appendChild(noticeBox);
    if (!readOnly) section.appendChild(actionForms(stream, group));
    section.appendChild(el('h3', { text: 'Lag (up to the last ' + fmtSpan(windowMs) + ')' }));
    section.appendChild(chartBox);
    section.appendChild(el('h3', { text: 'Partitions' }));
    section.appendChild(el('table', { 'data-testid': 'partitions' }, [
      el('thead', {}, [el('tr', {}, [el('th', { text: 'partition' }), el('th', { class: 'n', text: 'frontier' }), el('th', { class: 'n', text: 'high watermark' }), el('th', { class: 'n', text: 'lag' })])]),
      partitions,
    ]));
    section.appendChild(el('h3', { text: 'Dead letters' }));
    section.appendChild(el('table', { 'data-testid': 'dead-letter-table' }, [
      el('thead', {}, [el('tr', {}, headCells.map(function (t) { return el('th', { text: t }); }))]),
      dead,
    ]));
    section.appendChild(pager);
    section.hidden = false;
    detail = { figures: figures, chart: chartBox, partitions: partitions, dead: dead, pager: pager, notice: noticeBox, after: null, previous: [] };
    refresh();
  }
  function renderGroup(g, now) {
    detail.figures.textContent =
      'lag ' + g.lag + ' · inflight ' + g.inflight + ' · dead letters ' + g.deadLetters + ' · oldest unsettled ' + fmtAge(g.oldestUnsettledAgeMs) +
      ' · max attempts ' + g.maxAttempts + ' · ordering ' + g.ordering + (g.consumer ? ' · consumer ' + g.consumer : '');
    replaceRows(detail.chart, [chart(g.stream, g.group, now, true)]);
    replaceRows(detail.partitions, g.partitions.map(function (p) {
      return el('tr', {}, [el('td', { text: p.partition }), el('td', { class: 'n', text: p.frontier }), el('td', { class: 'n', text: p.highWatermark }), el('td', { class: 'n', text: p.lag })]);
    }));
  }
  function preview(payload) {
    if (payload === undefined) return '';
    if (payload === null) return '(trimmed)';
    var text = JSON.stringify(payload);
    return text.length > 200 ? text.slice(0, 200) + '…' : text;
  }
  function renderDeadLetters(page) {
    var rows = page.items.map(function (d) {
      var cells = [
        el('td', { class: 'mono', 'data-testid': 'event-id', text: d.eventId }),
        el('td', { class: 'n', text: d.partition }),
        el('td', { class: 'n', text: d.sequence }),
        el('td', { class: 'n', 'data-testid': 'attempt', text: d.attempt }),
        el('td', { text: fmtTime(d.deadLetteredAt) }),
        el('td', { text: d.type === null ? '–' : d.type }),
        el('td', { text: d.key === null ? '–' : d.key }),
        el('td', { 'data-testid': 'reason', text: d.reason }),
      ];
      if (showPayloads) cells.push(el('td', { class: 'mono payload', 'data-testid': 'payload', title: preview(d.payload), text: preview(d.payload) }));
      if (!readOnly) {
        cells.push(el('td', {}, [el('button', {
          type: 'button', 'data-testid': 'redrive-one', text: 'Redrive',
          onclick: function () { act(function (r) { return 'Redrove ' + r.redriven + ' dead letter(s)'; }, '/redrive', { eventIds: [d.eventId] }); },
        })]));
      }
      return el('tr', { 'data-testid': 'dead-letter-row', 'data-event-id': d.eventId }, cells);
    });
    if (rows.length === 0) rows.push(el('tr', {}, [el('td', { colspan: 10, class: 'muted', 'data-testid': 'no-dead-letters', text: 'No dead letters.' })]));
    replaceRows(detail.dead, rows);
    var buttons = [];
    if (detail.previous.length > 0) buttons.push(el('button', { type: 'button', text: 'Newer', onclick: function () { detail.after = detail.previous.pop(); refresh(); } }));
    if (page.next) buttons.push(el('button', { type: 'button', text: 'Older', onclick: function () { detail.previous.push(detail.after); detail.after = page.next; refresh(); } }));
    replaceRows(detail.pager, buttons);
  }

  // ---- the refresh loop -------------------------------------------------------------
  // One refresh at a time; one asked for meanwhile (after an action) runs right after.
  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    try {
      var o = await getJson('/overview?limit=' + STREAM_PAGE + (overviewAfter === null ? '' : '&after=' + encodeURIComponent(overviewAfter)));
      var now = Date.parse(o.at);
      o.streams.forEach(function (s) { s.groups.forEach(function (g) { remember(g.stream, g.group, now, g.lag); }); });
      renderOverview(o);
      if (selected && detail) {
        var g = null;
        o.streams.forEach(function (s) { s.groups.forEach(function (x) { if (x.stream === selected.stream && x.group === selected.group) g = x; }); });
        // The selected group's stream may be on another page: read the group itself.
        if (!g) {
          g = await getJson(groupPath(selected.stream, selected.group));
          remember(g.stream, g.group, now, g.lag);
        }
        if (g) renderGroup(g, now);
        var q = '?limit=' + PAGE + (detail.after ? '&after=' + encodeURIComponent(detail.after) : '');
        renderDeadLetters(await getJson(groupPath(selected.stream, selected.group) + '/dead-letters' + q));
      }
      showError(null);
    } catch (e) {
      showError('Could not refresh: ' + e.message);
    } finally {
      busy = false;
    }
    if (again) { again = false; await refresh(); }
  }
  async function start() {
    try {
      var h = await getJson('/lag-history');
      windowMs = h.windowMs;
      h.series.forEach(function (s) { history.set(keyOf(s.stream, s.group), s.points); });
    } catch (e) {}
    await refresh();
    setInterval(refresh, REFRESH_MS);
  }
  start();
})();
`;
