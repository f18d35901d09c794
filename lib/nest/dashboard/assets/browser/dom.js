// @ts-check
// DOM building and formatting for the dashboard's script. The one way a value
// reaches the page: `el` writes `text` with textContent and every other key with
// setAttribute, `svg` with setAttribute; nothing is ever parsed as HTML.
/* exported el, svg, one, replaceRows, fmtTime, fmtAge, fmtSpan, fmtRetention, preview, errorMessage, keyOf, showError */

/** @typedef {import('../../../../admin/types').Overview} Overview */
/** @typedef {import('../../../../admin/types').GroupSummary} GroupSummary */
/** @typedef {import('../../../../admin/types').DeadLetterPage} DeadLetterPage */
/** @typedef {import('../../lag-history').LagHistorySnapshot} LagHistorySnapshot */
/** @typedef {import('../../../../core/types').Retention} Retention */
/** @typedef {import('../../../../core/types').JsonValue} JsonValue */

/**
 * `text` is the element's textContent, `onclick` its click listener, any other key an
 * attribute (`true` an empty one); undefined, null and false are left out.
 * @typedef {Record<string, string | number | boolean | null | undefined | ((ev: Event) => void)>} Attrs
 */

/**
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} [attrs]
 * @param {Array<Node | string | null | undefined>} [children]
 * @returns {HTMLElementTagNameMap[K]}
 */
function el(tag, attrs, children) {
  const node = document.createElement(tag);
  if (attrs)
    for (const k in attrs) {
      const value = attrs[k];
      if (value === undefined || value === null || value === false) continue;
      if (k === 'text') node.textContent = String(value);
      else if (k === 'onclick') {
        // Only a listener: a string here would be an inline handler.
        if (typeof value === 'function') node.addEventListener('click', value);
      } else if (typeof value !== 'function') node.setAttribute(k, value === true ? '' : String(value));
    }
  (children || []).forEach(function (c) {
    if (c) node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  });
  return node;
}

const SVG = /** @type {const} */ ('http://www.w3.org/2000/svg');

/**
 * @param {string} tag
 * @param {Record<string, string | number>} attrs
 */
function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const k in attrs) node.setAttribute(k, String(attrs[k]));
  return node;
}

/**
 * The page's element for `selector`; the page is the server's, so a missing one is a bug.
 * @param {string} selector
 * @returns {HTMLElement}
 */
function one(selector) {
  const node = document.querySelector(selector);
  if (!(node instanceof HTMLElement)) throw new Error('the page has no ' + selector);
  return node;
}

/**
 * @param {Node} parent
 * @param {Node[]} rows
 */
function replaceRows(parent, rows) {
  while (parent.firstChild) parent.removeChild(parent.firstChild);
  rows.forEach(function (r) {
    parent.appendChild(r);
  });
}

/** @param {number} n */
function pad(n) {
  return n < 10 ? '0' + n : String(n);
}

/** @param {string} iso */
function fmtTime(iso) {
  const d = new Date(iso);
  if (isNaN(d.getTime())) return String(iso);
  return (
    d.getFullYear() +
    '-' +
    pad(d.getMonth() + 1) +
    '-' +
    pad(d.getDate()) +
    ' ' +
    pad(d.getHours()) +
    ':' +
    pad(d.getMinutes()) +
    ':' +
    pad(d.getSeconds())
  );
}

/** @param {number | null | undefined} ms */
function fmtAge(ms) {
  if (ms === null || ms === undefined) return '–';
  if (ms < 1000) return ms + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
  if (ms < 3600000) return Math.floor(ms / 60000) + ' min ' + Math.floor((ms % 60000) / 1000) + ' s';
  if (ms < 86400000) return Math.floor(ms / 3600000) + ' h ' + Math.floor((ms % 3600000) / 60000) + ' min';
  return Math.floor(ms / 86400000) + ' d ' + Math.floor((ms % 86400000) / 3600000) + ' h';
}

/** @param {number} ms */
function fmtSpan(ms) {
  return ms >= 60000 ? Math.round(ms / 60000) + ' min' : Math.round(ms / 1000) + ' s';
}

/** @param {Retention | null} r */
function fmtRetention(r) {
  if (!r) return '–';
  return Object.entries(r)
    .map(function (entry) {
      return entry[0] + ' ' + entry[1];
    })
    .join(', ');
}

/** @param {JsonValue | null | undefined} payload */
function preview(payload) {
  if (payload === undefined) return '';
  if (payload === null) return '(trimmed)';
  const text = JSON.stringify(payload);
  return text.length > 200 ? text.slice(0, 200) + '…' : text;
}

/** @param {unknown} e */
function errorMessage(e) {
  return e instanceof Error ? e.message : String(e);
}

/**
 * @param {string} stream
 * @param {string} group
 */
function keyOf(stream, group) {
  return JSON.stringify([stream, group]);
}

/** @param {string | null} message */
function showError(message) {
  const box = one('[data-testid=error]');
  box.textContent = message || '';
  box.hidden = !message;
}
