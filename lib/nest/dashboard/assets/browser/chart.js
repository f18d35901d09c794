// @ts-check
// Each group's lag over the last minutes, as this page (and, from the server's
// lag history, pages before it) saw it, and the SVG line drawn from it.
/* global keyOf, svg, fmtSpan */
/* exported lagWindowMs, remember, loadLagHistory, chart */

let lagWindowMs = 10 * 60000;
/** @type {Map<string, Array<[number, number]>>} `[epoch ms, lag]` by keyOf(stream, group), oldest first */
const lagPoints = new Map();

/**
 * @param {string} stream
 * @param {string} group
 * @param {number} at
 * @param {number} lag
 */
function remember(stream, group, at, lag) {
  const key = keyOf(stream, group);
  let points = lagPoints.get(key);
  if (!points) lagPoints.set(key, (points = []));
  const last = points[points.length - 1];
  if (last && at - last[0] < 1000) last[1] = lag;
  else points.push([at, lag]);
  while (points.length && points[0][0] < at - lagWindowMs) points.shift();
}

/** @param {LagHistorySnapshot} h */
function loadLagHistory(h) {
  lagWindowMs = h.windowMs;
  h.series.forEach(function (s) {
    lagPoints.set(keyOf(s.stream, s.group), s.points);
  });
}

/**
 * A line of the group's lag up to 'now', over what the history holds (at least 30 s,
 * at most the window), so a just-opened page draws a readable line; axes
 * and labels when 'big'.
 * @param {string} stream
 * @param {string} group
 * @param {number} now
 * @param {boolean} big
 */
function chart(stream, group, now, big) {
  const w = big ? 640 : 160,
    h = big ? 160 : 32;
  const left = big ? 40 : 0,
    bottom = big ? 18 : 0,
    top = big ? 8 : 2;
  const points = (lagPoints.get(keyOf(stream, group)) || []).filter(function (p) {
    return p[0] >= now - lagWindowMs && p[0] <= now;
  });
  const span = Math.min(lagWindowMs, Math.max(30000, points.length ? now - points[0][0] : 0));
  let max = 1;
  points.forEach(function (p) {
    if (p[1] > max) max = p[1];
  });
  const root = svg('svg', { class: 'chart', viewBox: '0 0 ' + w + ' ' + h, width: w, height: h, role: 'img' });
  root.setAttribute('data-testid', big ? 'lag-chart' : 'lag-sparkline');
  root.setAttribute('aria-label', 'lag of ' + group + ' over the last ' + fmtSpan(span) + ', at most ' + max);
  /** @param {number} t */
  const x = function (t) {
    return left + ((t - (now - span)) / span) * (w - left - 1);
  };
  /** @param {number} v */
  const y = function (v) {
    return top + (1 - v / max) * (h - top - bottom - 1);
  };
  root.appendChild(svg('line', { class: 'axis', x1: left, y1: h - bottom - 0.5, x2: w, y2: h - bottom - 0.5 }));
  if (big) {
    root.appendChild(svg('line', { class: 'axis', x1: left, y1: top, x2: left, y2: h - bottom }));
    /**
     * @param {string} text
     * @param {number} lx
     * @param {number} ly
     * @param {string} anchor
     */
    const label = function (text, lx, ly, anchor) {
      const t = svg('text', { x: lx, y: ly, 'text-anchor': anchor });
      t.textContent = text;
      root.appendChild(t);
    };
    label(String(max), left - 4, top + 8, 'end');
    label('0', left - 4, h - bottom, 'end');
    label('-' + fmtSpan(span), left, h - 4, 'start');
    label('now', w - 2, h - 4, 'end');
  }
  if (points.length > 0) {
    const line = points.map(function (p) {
      return x(p[0]).toFixed(1) + ',' + y(p[1]).toFixed(1);
    });
    // The last lag read holds until now.
    line.push(x(now).toFixed(1) + ',' + y(points[points.length - 1][1]).toFixed(1));
    const first = line[0].split(',')[0],
      last = line[line.length - 1].split(',')[0];
    const floor = (h - bottom - 1).toFixed(1);
    root.appendChild(svg('polygon', { class: 'area', points: first + ',' + floor + ' ' + line.join(' ') + ' ' + last + ',' + floor }));
    root.appendChild(svg('polyline', { class: 'line', points: line.join(' ') }));
  }
  return root;
}
