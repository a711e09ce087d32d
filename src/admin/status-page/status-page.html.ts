/** The status page's markup and style; the behaviour is in status-page.script.ts. */
export const STATUS_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>disagg-router status</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1f2328; }
  h1 { font-size: 1.3rem; margin: 0 0 1rem; }
  h2 { font-size: 1.05rem; margin: 1.5rem 0 .4rem; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: .25rem .6rem; border-bottom: 1px solid #d0d7de; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  .ready { color: #1a7f37; } .draining { color: #9a6700; } .unhealthy, .open { color: #cf222e; } .preparing, .half_open { color: #6e7781; }
  .cards { display: flex; gap: 1rem; flex-wrap: wrap; }
  .card { border: 1px solid #d0d7de; border-radius: 6px; padding: .6rem .8rem; min-width: 16rem; }
  .card .value { font-size: 1.2rem; font-variant-numeric: tabular-nums; }
  svg.spark { display: block; width: 16rem; height: 2.5rem; }
  svg.spark polyline { fill: none; stroke: #0969da; stroke-width: 1.5; }
  #error { color: #cf222e; min-height: 1.2em; }
  #login[hidden], #status[hidden] { display: none; }
  .policy { font-family: ui-monospace, monospace; }
</style>
</head>
<body>
<h1>disagg-router</h1>
<p id="error" role="alert"></p>
<form id="login">
  <label>Admin token <input id="token" type="password" autocomplete="off" size="40" required></label>
  <button type="submit">Show status</button>
</form>
<main id="status" hidden>
  <div class="cards">
    <div class="card"><div>Requests / s</div><div class="value" id="rate">-</div><svg class="spark" id="rate-spark" viewBox="0 0 100 20" preserveAspectRatio="none"><polyline points=""/></svg></div>
    <div class="card"><div>Prefix-hit ratio</div><div class="value" id="hit">-</div><svg class="spark" id="hit-spark" viewBox="0 0 100 20" preserveAspectRatio="none"><polyline points=""/></svg></div>
  </div>
  <div id="pools"></div>
  <p><small id="updated"></small> <button id="logout" type="button">Forget token</button></p>
</main>
<script src="/admin/status/app.js"></script>
</body>
</html>
`;
