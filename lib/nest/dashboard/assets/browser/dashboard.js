// @ts-check
// The dashboard page's script: plain browser JavaScript, no framework, no chart
// library. The server serves the files of this directory as one script, joined
// inside one function in the order of DASHBOARD_SCRIPT_PARTS
// (../dashboard-script.ts), this one last: they share that function's scope, and
// the comments at the top of each file name what it takes from the others
// (global) and gives them (exported). Every value from the API reaches the page
// through textContent or setAttribute (dom.js), never as HTML. The browser tests
// drive it.
/* global showError, errorMessage, remember, loadLagHistory, getJson, groupPath, overviewAfter, renderOverview,
   selected, detail, renderGroup, renderDeadLetters */
/* exported refresh */

const REFRESH_MS = 2000;
/** Dead letters a page. */
const PAGE = 50;
// The overview is read a page of streams at a time (each with its groups): a store of many
// streams costs each 2 s refresh one page of reads, not all of them.
const STREAM_PAGE = 50;
let busy = false;
let again = false;

/**
 * One refresh at a time; one asked for meanwhile (after an action) runs right after.
 * @returns {Promise<void>}
 */
async function refresh() {
  if (busy) {
    again = true;
    return;
  }
  busy = true;
  try {
    /** @type {Overview} */
    const o = await getJson(
      '/overview?limit=' + STREAM_PAGE + (overviewAfter === null ? '' : '&after=' + encodeURIComponent(overviewAfter)),
    );
    const now = Date.parse(o.at);
    o.streams.forEach(function (s) {
      s.groups.forEach(function (g) {
        remember(g.stream, g.group, now, g.lag);
      });
    });
    renderOverview(o);
    if (selected && detail) {
      const open = selected;
      const view = detail;
      let g = findGroup(o, open);
      // The selected group's stream may be on another page: read the group itself.
      if (!g) {
        g = /** @type {GroupSummary} */ (await getJson(groupPath(open.stream, open.group)));
        remember(g.stream, g.group, now, g.lag);
      }
      // Another group opened meanwhile has a view of its own, which its refresh (queued) fills.
      if (view === detail) renderGroup(view, g, now);
      const q = '?limit=' + PAGE + (view.after ? '&after=' + encodeURIComponent(view.after) : '');
      const deadLetters = await getJson(groupPath(open.stream, open.group) + '/dead-letters' + q);
      if (view === detail) renderDeadLetters(view, deadLetters);
    }
    showError(null);
  } catch (e) {
    showError('Could not refresh: ' + errorMessage(e));
  } finally {
    busy = false;
  }
  if (again) {
    again = false;
    await refresh();
  }
}

/**
 * @param {Overview} o
 * @param {{ stream: string, group: string }} which
 */
function findGroup(o, which) {
  /** @type {GroupSummary | undefined} */
  let found;
  o.streams.forEach(function (s) {
    s.groups.forEach(function (x) {
      if (x.stream === which.stream && x.group === which.group) found = x;
    });
  });
  return found;
}

async function start() {
  try {
    loadLagHistory(await getJson('/lag-history'));
  } catch {
    // No history (yet): the charts start from this page's reads.
  }
  await refresh();
  setInterval(refresh, REFRESH_MS);
}

start();
