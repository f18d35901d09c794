// The page's HTML: a shell the script fills. It and the stylesheet are
// TypeScript modules exporting strings; the script is read from the package's
// own files (browser/, docs/adr/045); nothing is fetched from outside (docs/adr/027).

/** What the page is told by the server: where it is mounted and what it may show. */
export interface DashboardPageSettings {
  /** The page's own path (URL-encoded segments, no trailing slash); API and assets are below it. */
  base: string;
  instance: string;
  readOnly: boolean;
  showPayloads: boolean;
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

export function renderDashboardPage(s: DashboardPageSettings): string {
  const base = escapeHtml(s.base);
  const mode = s.readOnly ? 'read-only' : 'actions enabled';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Rheo · ${escapeHtml(s.instance)}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${base}/assets/dashboard.css">
<script src="${base}/assets/dashboard.js" defer></script>
</head>
<body data-base="${base}" data-read-only="${s.readOnly}" data-show-payloads="${s.showPayloads}">
<header>
  <h1>Rheo <span class="instance">${escapeHtml(s.instance)}</span></h1>
  <span class="badge ${s.readOnly ? 'ro' : 'rw'}" data-testid="mode">${mode}</span>
  <span class="updated" data-testid="updated">loading…</span>
</header>
<div class="error" data-testid="error" role="alert" hidden></div>
<main>
  <section>
    <h2>Streams</h2>
    <table data-testid="streams">
      <thead><tr><th>stream</th><th class="n">partitions</th><th class="n">high watermark</th><th>retention</th><th class="n">groups</th></tr></thead>
      <tbody></tbody>
    </table>
    <div class="pager" data-testid="overview-pager"></div>
  </section>
  <section>
    <h2>Groups</h2>
    <table data-testid="groups">
      <thead><tr><th>stream</th><th>group</th><th class="n">lag</th><th class="n">inflight</th><th class="n">dead letters</th><th class="n">oldest unsettled</th><th>consumer</th><th>lag trend</th><th></th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <section data-testid="detail" hidden></section>
</main>
<footer>nestjs-rheo dashboard · refreshes every 2 s</footer>
</body>
</html>
`;
}
