// @ts-check
// The dashboard's JSON API, below the page's own path (data-base).
/* exported groupPath, getJson, postJson */

const base = document.body.dataset.base;

/**
 * @param {string} stream
 * @param {string} group
 */
function groupPath(stream, group) {
  return '/streams/' + encodeURIComponent(stream) + '/groups/' + encodeURIComponent(group);
}

/**
 * The error of a refused request, with the server's message when it sent one.
 * @param {Response} res
 */
async function failure(res) {
  let text = res.status + ' ' + res.statusText;
  try {
    const b = await res.json();
    if (b && b.message) text = res.status + ': ' + (Array.isArray(b.message) ? b.message.join(', ') : b.message);
  } catch {
    // Not JSON: the status line says it.
  }
  return new Error(text);
}

/**
 * @param {string} path
 * @returns {Promise<any>} the answer's JSON, shaped as the route's type (lib/admin/types.ts)
 */
async function getJson(path) {
  const res = await fetch(base + '/api' + path, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
  if (!res.ok) throw await failure(res);
  return res.json();
}

/**
 * Actions carry the header the server requires of every action POST (no CSRF by a plain form).
 * @param {string} path
 * @param {unknown} payload
 * @returns {Promise<any>}
 */
async function postJson(path, payload) {
  const res = await fetch(base + '/api' + path, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', accept: 'application/json', 'x-rheo-dashboard': '1' },
    body: JSON.stringify(payload),
  });
  if (!res.ok) throw await failure(res);
  return res.json();
}
