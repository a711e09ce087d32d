/**
 * The status page's script, served as /admin/status/app.js. Plain browser JavaScript: it
 * keeps the token in sessionStorage, polls the admin API every second and renders the pools,
 * their servers and sparklines of the request rate and the prefix-hit ratio.
 */
export const STATUS_PAGE_SCRIPT = String.raw`'use strict';
(function () {
  var POLL_MS = 1000, HISTORY = 60, KEY = 'disagg-router-admin-token';
  var $ = function (id) { return document.getElementById(id); };
  var timer = null, previous = null, rates = [], hits = [];

  function token() { return sessionStorage.getItem(KEY); }

  function showLogin(message) {
    if (timer) clearTimeout(timer);
    timer = null;
    $('status').hidden = true;
    $('login').hidden = false;
    $('error').textContent = message || '';
    $('token').focus();
  }

  function api(path) {
    return fetch('/admin/v1/' + path, { headers: { authorization: 'Bearer ' + token() }, cache: 'no-store' }).then(function (res) {
      if (res.status === 401) { var e = new Error('unauthorized'); e.unauthorized = true; throw e; }
      if (!res.ok) throw new Error(path + ': HTTP ' + res.status);
      return res.json();
    });
  }

  function cell(row, text, cls) {
    var td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    row.appendChild(td);
    return td;
  }

  function renderPools(servers, routers) {
    var root = $('pools');
    root.textContent = '';
    routers.routers.forEach(function (router) {
      var h = document.createElement('h2');
      h.textContent = router.pool + ' pool ';
      var policy = document.createElement('span');
      policy.className = 'policy';
      policy.dataset.pool = router.pool;
      policy.textContent = router.type + (Object.keys(router.args).length ? ' ' + JSON.stringify(router.args) : '');
      h.appendChild(policy);
      root.appendChild(h);
      var table = document.createElement('table');
      table.dataset.pool = router.pool;
      var head = table.createTHead().insertRow();
      ['server', 'state', 'in flight', 'tokens', 'KV blocks', 'breaker', 'last health', 'source'].forEach(function (t) {
        var th = document.createElement('th'); th.textContent = t; head.appendChild(th);
      });
      var body = table.createTBody();
      servers.servers.filter(function (s) { return s.role === router.pool; }).forEach(function (s) {
        var row = body.insertRow();
        row.dataset.serverId = s.id;
        cell(row, s.url, 'url');
        cell(row, s.state, 'state ' + s.state);
        cell(row, String(s.active_requests), 'num load');
        cell(row, String(s.active_tokens), 'num');
        cell(row, String(s.kv_blocks_known), 'num kv');
        var breaker = s.circuit && s.circuit.state ? s.circuit.state : 'closed';
        cell(row, breaker, 'breaker ' + breaker);
        var health = s.last_health;
        cell(row, health ? (health.ok ? 'ok' : 'failed') + ' ' + new Date(health.at || Date.now()).toLocaleTimeString() : '-');
        cell(row, s.source);
      });
      root.appendChild(table);
    });
  }

  function spark(id, values) {
    var svg = $(id), max = Math.max.apply(null, values.concat([0]));
    var scale = max > 0 ? max : 1, step = 100 / (HISTORY - 1), start = HISTORY - values.length;
    var points = values.map(function (v, i) { return ((start + i) * step).toFixed(1) + ',' + (20 - (v / scale) * 19).toFixed(1); });
    svg.querySelector('polyline').setAttribute('points', points.join(' '));
    svg.dataset.max = String(max);
    svg.dataset.points = String(values.length);
  }

  function push(list, v) { list.push(v); if (list.length > HISTORY) list.shift(); }

  function renderStats(stats) {
    if (previous && stats.at > previous.at) {
      var seconds = (stats.at - previous.at) / 1000;
      var rate = (stats.requests_total - previous.requests_total) / seconds;
      var prompt = stats.kv_prompt_tokens_total - previous.kv_prompt_tokens_total;
      var hit = prompt > 0 ? (stats.kv_matched_tokens_total - previous.kv_matched_tokens_total) / prompt : 0;
      push(rates, rate); push(hits, hit);
      $('rate').textContent = rate.toFixed(1);
      $('hit').textContent = prompt > 0 ? (hit * 100).toFixed(0) + ' %' : '-';
      spark('rate-spark', rates); spark('hit-spark', hits);
    }
    previous = stats;
  }

  function poll() {
    Promise.all([api('servers'), api('routers'), api('stats')]).then(function (r) {
      $('error').textContent = '';
      $('login').hidden = true;
      $('status').hidden = false;
      renderPools(r[0], r[1]);
      renderStats(r[2]);
      $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
      timer = setTimeout(poll, POLL_MS);
    }, function (err) {
      if (err.unauthorized) { sessionStorage.removeItem(KEY); showLogin('That token was not accepted.'); return; }
      $('error').textContent = 'The router did not answer: ' + err.message;
      timer = setTimeout(poll, POLL_MS);
    });
  }

  $('login').addEventListener('submit', function (event) {
    event.preventDefault();
    sessionStorage.setItem(KEY, $('token').value);
    $('token').value = '';
    previous = null; rates = []; hits = [];
    poll();
  });
  $('logout').addEventListener('click', function () { sessionStorage.removeItem(KEY); showLogin(''); });

  if (token()) poll(); else showLogin('');
})();
`;
