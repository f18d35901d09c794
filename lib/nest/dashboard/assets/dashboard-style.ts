// The page's stylesheet, served at <path>/assets/dashboard.css (no inline style:
// the page's Content-Security-Policy allows only same-origin stylesheets).
export const DASHBOARD_STYLE = `
:root {
  --fg: #1d2330; --muted: #667085; --line: #e4e7ec; --bg: #f7f8fa; --card: #ffffff;
  --accent: #2f6fec; --ok: #1a7f4b; --warn: #b54708; --bad: #c0262d;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--fg); background: var(--bg);
}
body { margin: 0; }
header { display: flex; align-items: center; gap: 12px; padding: 12px 24px; background: #111827; color: #f9fafb; }
header h1 { font-size: 18px; margin: 0; font-weight: 600; }
header .instance { color: #9ca3af; font-weight: 400; }
.badge { font-size: 12px; padding: 2px 8px; border-radius: 10px; }
.badge.ro { background: #374151; color: #e5e7eb; }
.badge.rw { background: #b54708; color: #fff; }
.updated { margin-left: auto; font-size: 12px; color: #9ca3af; }
main { padding: 8px 24px 24px; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; margin-top: 16px; }
h2 { font-size: 15px; margin: 0 0 8px; }
h3 { font-size: 14px; margin: 16px 0 6px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: middle; }
th { font-weight: 600; color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .02em; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
td.mono, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
tr.selected td { background: #eef4ff; }
.lag-behind { color: var(--warn); font-weight: 600; }
.lag-zero { color: var(--ok); }
.dead { color: var(--bad); font-weight: 600; }
.state-running { color: var(--ok); }
.state-backing_off, .state-draining { color: var(--warn); }
.state-stopped { color: var(--muted); }
.warning { color: var(--warn); font-size: 12px; display: block; }
.paused { color: var(--warn); }
span.paused { font-size: 12px; display: block; font-weight: 600; }
p.paused { margin: 4px 0; padding: 6px 10px; border-radius: 6px; background: #fffaeb; border: 1px solid #fedf89; }
.muted { color: var(--muted); }
.error { margin: 16px 24px 0; padding: 8px 12px; border-radius: 6px; background: #fef3f2; color: var(--bad); border: 1px solid #fecdca; }
.notice { margin: 8px 0; padding: 6px 10px; border-radius: 6px; background: #ecfdf3; color: var(--ok); }
.notice.failed { background: #fef3f2; color: var(--bad); }
button { font: inherit; font-size: 13px; padding: 3px 10px; border-radius: 6px; border: 1px solid #d0d5dd; background: #fff; cursor: pointer; }
button:hover { background: #f2f4f7; }
button.danger { border-color: #fda29b; color: var(--bad); }
button:disabled { opacity: .5; cursor: not-allowed; }
input, select, textarea { font: inherit; font-size: 13px; padding: 3px 6px; border: 1px solid #d0d5dd; border-radius: 6px; }
.actions { display: flex; flex-wrap: wrap; gap: 24px; margin-top: 8px; }
.results { margin: 4px 0; padding-left: 20px; font-family: ui-monospace, monospace; font-size: 12px; color: var(--ok); }
.results .failed { color: var(--bad); }
.pager { display: flex; align-items: center; gap: 8px; margin-top: 6px; }
.actions form { display: flex; align-items: center; gap: 6px; }
.chart { display: block; }
.chart .line { fill: none; stroke: var(--accent); stroke-width: 1.5; }
.chart .area { fill: #2f6fec1f; stroke: none; }
.chart .axis { stroke: var(--line); stroke-width: 1; }
.chart text { font-size: 10px; fill: var(--muted); }
.payload { max-width: 420px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
footer { padding: 0 24px 16px; color: var(--muted); font-size: 12px; }
`;
