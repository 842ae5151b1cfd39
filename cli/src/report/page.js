// flightrec report: the page's script. It reads the JSON in #data and
// draws every part on canvases; nothing is fetched. `window.report` is the
// page's interface for scripts (the tests drive it): select(c0, c1),
// baseline(c0, c1), setKind(k), search(re), total(), matched().
'use strict';
(function () {
var D = JSON.parse(document.getElementById('data').textContent);
var N = D.parent.length, ROW = 16, LABEL = 200;
var kindNames = { cpu: 'CPU time', wall: 'wall clock', alloc: 'allocation', lock: 'lock' };
var units = { count: 'samples', bytes: 'bytes', nanoseconds: 'ns' };
var kinds = Object.keys(D.kinds);
var S = { kind: kinds[0] || null, sel: null, base: null, thread: null, re: null, zoom: 0, reverse: false, lane: null };

function el(tag, attrs, text) {
  var e = document.createElement(tag);
  for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text != null) e.textContent = text;
  return e;
}
function secs(ns) { return (ns / 1e9).toFixed(ns < 1e10 ? 3 : 1) + ' s'; }
function cellTime(c) { return c * D.cell; }
function fmtNum(v) { return Math.round(v).toLocaleString('en-US'); }
function fmtW(v, unit) {
  if (unit === 'bytes') return v >= 1048576 ? (v / 1048576).toFixed(1) + ' MiB' : fmtNum(v) + ' bytes';
  if (unit === 'nanoseconds') return v >= 1e6 ? (v / 1e6).toFixed(1) + ' ms' : fmtNum(v) + ' ns';
  return fmtNum(v) + ' samples';
}
function hash(s) { var h = 0; for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0; return h >>> 0; }
function canvas(parent, w, h) {
  var c = parent.querySelector('canvas') || parent.appendChild(el('canvas'));
  var r = window.devicePixelRatio || 1;
  c.width = Math.round(w * r); c.height = Math.round(h * r);
  c.style.width = w + 'px'; c.style.height = h + 'px';
  var g = c.getContext('2d'); g.setTransform(r, 0, 0, r, 0, 0);
  g.font = '12px sans-serif'; g.textBaseline = 'middle';
  return g;
}
var tip = document.body.appendChild(el('div', { id: 'tip' }));
function showTip(ev, text) {
  tip.textContent = text; tip.style.display = 'block';
  var x = ev.clientX + 14, y = ev.clientY + 14;
  if (x + 420 > innerWidth) x = Math.max(0, ev.clientX - 430);
  if (y + tip.offsetHeight > innerHeight) y = Math.max(0, ev.clientY - tip.offsetHeight - 8);
  tip.style.left = x + 'px'; tip.style.top = y + 'px';
}
function hideTip() { tip.style.display = 'none'; }

// ---- the page's frame
var nav = document.body.appendChild(el('nav'));
nav.appendChild(el('b', {}, D.title));
var parts = [['overview', 'Overview'], ['findings', 'Findings'], ['heatmap', 'Heatmap'], ['flame', 'Flame graph'], ['lanes', 'Threads'], ['events', 'Events']];
var sec = {};
parts.forEach(function (p) {
  nav.appendChild(el('a', { href: '#' + p[0] }, p[1]));
  var s = document.body.appendChild(el('section', { id: p[0] }));
  s.appendChild(el('h2', {}, p[1]));
  sec[p[0]] = s;
});

// ---- overview
(function () {
  var s = sec.overview;
  var lost = D.losses.filter(function (l) { return l[1] || l[2]; });
  if (lost.length) {
    lost.forEach(function (l) {
      s.appendChild(el('div', { class: 'loss' }, 'LOST: ' + l[0] + ': ' + fmtNum(l[1]) + ' events, ' + fmtNum(l[2]) + ' bytes'));
    });
  } else s.appendChild(el('p', { class: 'noloss' }, 'No events lost.'));
  var total = 0, bytes = 0;
  D.types.forEach(function (t) { total += t[1]; bytes += t[2]; });
  s.appendChild(el('p', {}, (D.file || '') + ': started ' + D.start + ' UTC, ' + secs(D.span) + ', ' + D.chunks +
    ' chunk(s), ' + fmtNum(total) + ' events, ' + fmtNum(bytes) + ' bytes. Time cells of ' + D.cell / 1e6 + ' ms.'));
  var row = s.appendChild(el('div', { class: 'row' }));
  var tbl = row.appendChild(el('table', { id: 'types' }));
  var hr = tbl.appendChild(el('tr'));
  hr.appendChild(el('th', {}, 'Event type')); hr.appendChild(el('th', { class: 'n' }, 'Count')); hr.appendChild(el('th', { class: 'n' }, 'Bytes'));
  D.types.forEach(function (t) {
    var r = tbl.appendChild(el('tr'));
    r.appendChild(el('td', {}, t[0])); r.appendChild(el('td', { class: 'n' }, fmtNum(t[1]))); r.appendChild(el('td', { class: 'n' }, fmtNum(t[2])));
  });
  var charts = row.appendChild(el('div', { class: 'chart', id: 'charts' }));
  var cpu = charts.appendChild(el('div', { id: 'cpu-chart' }));
  var rss = charts.appendChild(el('div', { id: 'rss-chart' }));
  function line(box, title, series, max, fmt) {
    box.appendChild(el('div', {}, title));
    if (!series.length) { box.appendChild(el('div', { class: 'muted' }, 'not in this recording')); return; }
    var w = Math.max(300, box.clientWidth || 500), h = 140;
    var g = canvas(box, w, h);
    g.strokeStyle = '#ccc'; g.strokeRect(40.5, 0.5, w - 41, h - 21);
    g.fillStyle = '#555'; g.fillText(fmt(max), 2, 8); g.fillText(fmt(0), 2, h - 26);
    g.fillText('0 s', 40, h - 8); g.fillText(secs(D.span), w - 70, h - 8);
    series.forEach(function (sr) {
      g.strokeStyle = sr.color; g.lineWidth = 1.5; g.beginPath();
      sr.points.forEach(function (p, i) {
        var x = 40 + (w - 41) * (p[0] + 0.5) / D.cells, y = (h - 21) * (1 - p[1] / (max || 1));
        if (i) g.lineTo(x, y); else g.moveTo(x, y);
      });
      g.stroke();
    });
    var legend = box.appendChild(el('div', {}));
    series.forEach(function (sr) { var sp = legend.appendChild(el('span', {}, '\u25a0 ' + sr.name + '  ')); sp.style.color = sr.color; });
  }
  line(cpu, 'CPU load (jdk.CPULoad)', D.cpuLoad.length ? [
    { name: 'process', color: '#c62828', points: D.cpuLoad.map(function (p) { return [p[0], p[1]]; }) },
    { name: 'machine', color: '#1565c0', points: D.cpuLoad.map(function (p) { return [p[0], p[2]]; }) }] : [], 1,
    function (v) { return Math.round(v * 100) + '%'; });
  var maxRss = 0; D.rss.forEach(function (p) { maxRss = Math.max(maxRss, p[1]); });
  line(rss, 'Resident set size (jdk.ResidentSetSize)', D.rss.length ? [{ name: 'RSS', color: '#6a1b9a', points: D.rss }] : [], maxRss,
    function (v) { return (v / 1048576).toFixed(0) + ' MiB'; });
})();

// ---- the frame tree and its weights
var kids = []; var depth = new Int32Array(N);
for (var n = 0; n < N; n++) kids.push([]);
for (n = 1; n < N; n++) { kids[D.parent[n]].push(n); depth[n] = depth[D.parent[n]] + 1; }
function fname(n) { return n === 0 ? 'all' : D.frames[D.frame[n]]; }
kids.forEach(function (k) { k.sort(function (a, b) { return fname(a) < fname(b) ? -1 : fname(a) > fname(b) ? 1 : 0; }); });
function weights(kind, r, thread) {
  var w = new Float64Array(N);
  if (!kind) return w;
  var e = D.kinds[kind].entries;
  for (var i = 0; i < e.length; i += 4) {
    if (r && (e[i] < r.c0 || e[i] >= r.c1)) continue;
    if (thread != null && e[i + 2] !== thread) continue;
    w[e[i + 1]] += e[i + 3];
  }
  for (var m = N - 1; m > 0; m--) w[D.parent[m]] += w[m];
  return w;
}
function perCell(kind, thread) {
  var v = new Float64Array(D.cells + 1);
  if (!kind) return v;
  var e = D.kinds[kind].entries;
  for (var i = 0; i < e.length; i += 4) if (thread == null || e[i + 2] === thread) v[e[i]] += e[i + 3];
  return v;
}

// ---- heatmap
var heat = { box: null, R: 1, C: 1, cw: 1, rh: 1 };
(function () {
  var s = sec.heatmap;
  var tools = s.appendChild(el('div', { class: 'tools' }));
  kinds.forEach(function (k) {
    var b = tools.appendChild(el('button', { 'data-kind': k }, kindNames[k] + ' (' + fmtNum(D.kinds[k].events) + ')'));
    b.onclick = function () { report.setKind(k); };
  });
  if (!kinds.length) tools.appendChild(el('span', { class: 'muted' }, 'No samples in this recording.'));
  tools.appendChild(el('span', { id: 'heat-sel', class: 'muted' }, 'Drag to select a time range; shift-drag to pick a baseline.'));
  var clr = tools.appendChild(el('button', {}, 'Clear'));
  clr.onclick = function () { report.clear(); };
  heat.box = s.appendChild(el('div', { id: 'heat' }));
  var drag = null;
  function at(ev) {
    var r = ev.target.getBoundingClientRect();
    var col = Math.floor((ev.clientX - r.left) / heat.cw), row = Math.floor((ev.clientY - r.top) / heat.rh);
    row = Math.max(0, Math.min(heat.R - 1, row)); col = Math.max(0, Math.min(heat.C - 1, col));
    return Math.min(D.cells - 1, col * heat.R + row);
  }
  heat.box.addEventListener('mousedown', function (ev) { drag = { a: at(ev), shift: ev.shiftKey }; ev.preventDefault(); });
  heat.box.addEventListener('mousemove', function (ev) {
    var c = at(ev), v = heat.v ? heat.v[c] : 0;
    showTip(ev, secs(cellTime(c)) + ' \u2013 ' + secs(cellTime(c + 1)) + ': ' + fmtW(v, S.kind ? D.kinds[S.kind].unit : 'count'));
    if (drag) { drag.b = c; drawHeat(drag); }
  });
  heat.box.addEventListener('mouseleave', hideTip);
  addEventListener('mouseup', function (ev) {
    if (!drag) return;
    var a = drag.a, b = drag.b == null ? a : drag.b, d = drag; drag = null;
    var r = { c0: Math.min(a, b), c1: Math.max(a, b) + 1 };
    if (d.shift) report.baseline(r.c0, r.c1); else report.select(r.c0, r.c1);
  });
})();
function drawHeat(drag) {
  var cells = D.cells;
  heat.R = Math.max(1, Math.min(20, Math.floor(cells / 30)));
  heat.C = Math.ceil(cells / heat.R);
  var w = heat.box.clientWidth || 1000;
  heat.cw = w / heat.C; heat.rh = Math.max(6, Math.min(24, Math.floor(200 / heat.R)));
  var h = heat.R * heat.rh;
  var g = canvas(heat.box, w, h + 18);
  var v = heat.v = perCell(S.kind, null), max = 0;
  for (var i = 0; i < cells; i++) max = Math.max(max, v[i]);
  function inR(c, r) { return r && c >= r.c0 && c < r.c1; }
  var live = drag && drag.b != null ? { c0: Math.min(drag.a, drag.b), c1: Math.max(drag.a, drag.b) + 1 } : null;
  for (i = 0; i < cells; i++) {
    var col = Math.floor(i / heat.R), row = i % heat.R, t = max ? Math.sqrt(v[i] / max) : 0;
    g.fillStyle = v[i] ? 'rgb(255,' + Math.round(245 - 200 * t) + ',' + Math.round(235 - 235 * t) + ')' : '#fff';
    g.fillRect(col * heat.cw, row * heat.rh, Math.ceil(heat.cw), heat.rh);
    var sel = live ? (drag.shift ? null : live) : S.sel, base = live && drag.shift ? live : S.base;
    if (inR(i, sel)) { g.fillStyle = 'rgba(21,101,192,.35)'; g.fillRect(col * heat.cw, row * heat.rh, Math.ceil(heat.cw), heat.rh); }
    if (inR(i, base)) { g.fillStyle = 'rgba(46,125,50,.35)'; g.fillRect(col * heat.cw, row * heat.rh, Math.ceil(heat.cw), heat.rh); }
  }
  g.fillStyle = '#555';
  var step = Math.max(1, Math.ceil(80 / heat.cw));
  for (col = 0; col < heat.C; col += step) g.fillText(secs(cellTime(col * heat.R)), col * heat.cw + 2, h + 9);
  var txt = document.getElementById('heat-sel');
  var parts = [];
  if (S.sel) parts.push('selected ' + secs(cellTime(S.sel.c0)) + ' \u2013 ' + secs(cellTime(S.sel.c1)));
  if (S.base) parts.push('baseline ' + secs(cellTime(S.base.c0)) + ' \u2013 ' + secs(cellTime(S.base.c1)));
  txt.textContent = parts.length ? parts.join('; ') : 'Drag to select a time range; shift-drag to pick a baseline.';
  document.querySelectorAll('[data-kind]').forEach(function (b) { b.className = b.getAttribute('data-kind') === S.kind ? 'on' : ''; });
}

// ---- flame graph
var flame = { box: null, rects: [], w: null, bw: null };
(function () {
  var s = sec.flame;
  var tools = s.appendChild(el('div', { class: 'tools' }));
  var q = tools.appendChild(el('input', { type: 'text', id: 'flame-search', placeholder: 'Search (regular expression)' }));
  q.oninput = function () { report.search(q.value); };
  var rev = tools.appendChild(el('button', { id: 'flame-reverse' }, 'Icicle'));
  rev.onclick = function () { S.reverse = !S.reverse; rev.className = S.reverse ? 'on' : ''; drawFlame(); };
  var un = tools.appendChild(el('button', {}, 'Reset zoom'));
  un.onclick = function () { S.zoom = 0; drawFlame(); };
  tools.appendChild(el('span', { id: 'flame-total' }));
  tools.appendChild(el('span', { id: 'flame-matched' }));
  tools.appendChild(el('span', { id: 'flame-thread', class: 'muted' }));
  flame.box = s.appendChild(el('div', { id: 'flame-graph' }));
  flame.box.addEventListener('mousemove', function (ev) {
    var f = hit(ev);
    if (!f) { hideTip(); return; }
    var n = f[3], u = S.kind ? D.kinds[S.kind].unit : 'count', w = flame.w;
    var t = fname(n) + '\n' + fmtW(w[n], u) + ', ' + (100 * w[n] / (w[0] || 1)).toFixed(2) + '%';
    if (flame.bw) t += '\nbaseline: ' + (100 * flame.bw[n] / (flame.bw[0] || 1)).toFixed(2) + '%';
    showTip(ev, t);
  });
  flame.box.addEventListener('mouseleave', hideTip);
  flame.box.addEventListener('click', function (ev) { var f = hit(ev); if (f) { S.zoom = f[3]; drawFlame(); } });
  function hit(ev) {
    var r = flame.box.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    for (var i = 0; i < flame.rects.length; i++) {
      var f = flame.rects[i];
      if (x >= f[0] && x < f[0] + f[2] && y >= f[1] && y < f[1] + ROW) return f;
    }
    return null;
  }
})();
function matches(n) { return S.re && n !== 0 && S.re.test(fname(n)); }
function drawFlame() {
  var w = flame.w = weights(S.kind, S.sel, S.thread);
  var bw = flame.bw = S.base ? weights(S.kind, S.base, S.thread) : null;
  var u = S.kind ? D.kinds[S.kind].unit : 'count';
  var W = flame.box.clientWidth || 1000;
  var maxDepth = 0;
  for (var n = 0; n < N; n++) if (w[n] > 0 && depth[n] > maxDepth) maxDepth = depth[n];
  var H = (maxDepth + 1) * ROW + 4;
  var g = canvas(flame.box, W, H);
  flame.rects = [];
  var z = w[S.zoom] > 0 ? S.zoom : 0, scale = W / (w[z] || 1);
  var maxDelta = 0, delta = null;
  if (bw) {
    delta = new Float64Array(N);
    for (n = 0; n < N; n++) { delta[n] = w[n] / (w[0] || 1) - bw[n] / (bw[0] || 1); maxDelta = Math.max(maxDelta, Math.abs(delta[n])); }
  }
  function y(d) { return S.reverse ? d * ROW : H - (d + 1) * ROW; }
  function color(n) {
    if (matches(n)) return 'rgb(230,0,230)';
    if (delta) {
      var t = maxDelta ? Math.abs(delta[n]) / maxDelta : 0, c = Math.round(255 * (1 - t));
      return delta[n] > 0 ? 'rgb(255,' + c + ',' + c + ')' : delta[n] < 0 ? 'rgb(' + c + ',' + c + ',255)' : '#fff';
    }
    var h = hash(fname(n));
    return 'rgb(' + (205 + h % 50) + ',' + (80 + (h >> 8) % 130) + ',' + (30 + (h >> 16) % 50) + ')';
  }
  function box(n, x, bwid) {
    g.fillStyle = color(n); g.fillRect(x, y(depth[n]), bwid - 0.5, ROW - 1);
    flame.rects.push([x, y(depth[n]), bwid, n]);
    if (bwid > 24) {
      var label = fname(n), room = Math.floor((bwid - 6) / 6.6);
      if (label.length > room) label = room > 2 ? label.slice(0, room - 2) + '..' : '';
      g.fillStyle = '#000'; g.fillText(label, x + 3, y(depth[n]) + ROW / 2);
    }
  }
  // The zoomed frame's ancestors span the width.
  for (var a = z; a !== -1; a = D.parent[a]) { if (a !== z) box(a, 0, W); if (a === 0) break; }
  (function walk(n, x) {
    var bwid = w[n] * scale;
    if (bwid < 0.3) return;
    box(n, x, bwid);
    var cx = x;
    kids[n].forEach(function (k) { if (w[k] > 0) { walk(k, cx); cx += w[k] * scale; } });
  })(z, 0);
  var tot = document.getElementById('flame-total');
  tot.textContent = (kindNames[S.kind] || '') + ': ' + fmtW(w[0], u) + (S.sel ? ' in ' + secs(cellTime(S.sel.c0)) + ' \u2013 ' + secs(cellTime(S.sel.c1)) : ' (whole recording)') +
    (bw ? ' \u2014 differential against the baseline: red more, blue less' : '');
  tot.setAttribute('data-total', w[0]);
  var m = document.getElementById('flame-matched');
  if (S.re) {
    var mw = matchedWeight(w), pct = function (v) { return (100 * v[0] / (w[0] || 1)).toFixed(2); };
    m.textContent = 'Matched: ' + pct(mw) + '% (as the top frame: ' + pct(mw.slice(1)) + '%)';
    m.setAttribute('data-share', pct(mw)); m.setAttribute('data-self', pct(mw.slice(1)));
  } else { m.textContent = ''; m.removeAttribute('data-share'); m.removeAttribute('data-self'); }
  document.getElementById('flame-thread').textContent = S.thread != null ? 'thread ' + D.threads[S.thread] + ' only (click its lane name again for all)' : '';
}
// [inclusive, self]: the weight of the matched frames (a frame under a
// matched one counted once) and of the samples whose top frame matches.
function matchedWeight(w) {
  var sum = 0, self = 0, stack = [0];
  for (var n = 1; n < N; n++) if (w[n] > 0 && matches(n)) {
    var own = w[n];
    for (var i = 0; i < kids[n].length; i++) own -= w[kids[n][i]];
    self += own;
  }
  while (stack.length) {
    n = stack.pop();
    if (w[n] <= 0) continue;
    if (matches(n)) { sum += w[n]; continue; }
    for (i = 0; i < kids[n].length; i++) stack.push(kids[n][i]);
  }
  return [sum, self];
}

// ---- thread lanes
var lanes = { box: null, hits: [] };
(function () {
  var s = sec.lanes;
  s.appendChild(el('p', { class: 'muted' }, 'One lane per thread: its sample density (shaded, the heatmap\'s kind) and its duration events (bars). Hover for an event\'s fields; click an event or a time to select it; click a name to show that thread alone in the flame graph.'));
  lanes.box = s.appendChild(el('div', { id: 'lane-box' }));
  lanes.box.addEventListener('mousemove', function (ev) {
    var h = laneHit(ev);
    if (!h) { hideTip(); return; }
    if (h.ev) {
      var e = h.ev;
      showTip(ev, e[0] + '\nstart ' + secs(e[1]) + ', duration ' + (e[2] / 1e6).toFixed(3) + ' ms\n' + e[3].map(function (f) { return f[0] + ': ' + f[1]; }).join('\n'));
    } else showTip(ev, D.threads[h.lane.thread] + (h.cell != null ? '\n' + secs(cellTime(h.cell)) : ''));
  });
  lanes.box.addEventListener('mouseleave', hideTip);
  lanes.box.addEventListener('click', function (ev) {
    var h = laneHit(ev);
    if (!h) return;
    if (h.ev) report.select(Math.floor(h.ev[1] / D.cell), Math.max(Math.floor(h.ev[1] / D.cell) + 1, Math.ceil((h.ev[1] + h.ev[2]) / D.cell)));
    else if (h.cell != null) report.select(h.cell, h.cell + 1);
    else { S.thread = S.thread === h.lane.thread ? null : h.lane.thread; S.zoom = 0; drawFlame(); }
  });
  function laneHit(ev) {
    var r = lanes.box.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    var i = Math.floor(y / 20), lane = D.lanes[i];
    if (!lane) return null;
    if (x < LABEL) return { lane: lane };
    var span = (lanes.w - LABEL) / D.span;
    for (var k = 0; k < lanes.hits.length; k++) {
      var h = lanes.hits[k];
      if (h[0] === i && x >= h[1] - 1 && x <= h[1] + h[2] + 1) return { lane: lane, ev: h[3] };
    }
    return { lane: lane, cell: Math.min(D.cells - 1, Math.floor((x - LABEL) / span / D.cell)) };
  }
})();
function drawLanes() {
  var W = lanes.w = lanes.box.clientWidth || 1000, H = D.lanes.length * 20 + 4;
  var g = canvas(lanes.box, W, H), span = (W - LABEL) / D.span;
  lanes.hits = [];
  D.lanes.forEach(function (lane, i) {
    var y0 = i * 20;
    if (S.lane === lane.thread) { g.fillStyle = '#fff59d'; g.fillRect(0, y0, W, 20); }
    g.fillStyle = S.thread === lane.thread ? '#1565c0' : '#222';
    var name = D.threads[lane.thread];
    g.fillText(name.length > 30 ? name.slice(0, 28) + '..' : name, 4, y0 + 10);
    var v = perCell(S.kind, lane.thread), max = 0;
    for (var c = 0; c < D.cells; c++) max = Math.max(max, v[c]);
    for (c = 0; c < D.cells; c++) if (v[c]) {
      g.fillStyle = 'rgba(96,125,139,' + (0.15 + 0.65 * v[c] / max).toFixed(2) + ')';
      g.fillRect(LABEL + cellTime(c) * span, y0 + 2, Math.max(1, D.cell * span), 16);
    }
    lane.events.forEach(function (e) {
      var x = LABEL + e[1] * span, w = Math.max(1.5, e[2] * span), h = hash(e[0]);
      g.fillStyle = 'hsl(' + h % 360 + ',70%,45%)';
      g.fillRect(x, y0 + 5, w, 10);
      lanes.hits.push([i, x, w, e]);
    });
    g.fillStyle = '#eee'; g.fillRect(0, y0 + 19, W, 1);
  });
  if (!D.lanes.length) { g.fillStyle = '#777'; g.fillText('No thread in this recording.', 4, 10); }
}

// ---- findings
(function () {
  var ul = sec.findings.appendChild(el('ul', { id: 'findings' }));
  D.findings.forEach(function (f) {
    var li = ul.appendChild(el('li', { 'data-severity': f.severity }));
    li.appendChild(el('span', { class: 'sev ' + f.severity }, f.severity));
    li.appendChild(el('span', {}, f.text));
    var l = f.link || {};
    var target = l.flame ? 'flame' : l.lane != null ? 'lanes' : l.section;
    if (!target) return;
    var a = li.appendChild(el('a', { href: '#' + target }, l.flame ? 'flame graph \u2192' : l.lane != null ? 'thread lane \u2192' : 'details \u2192'));
    a.onclick = function () {
      if (l.lane != null) { S.lane = l.lane; }
      if (l.flame && D.kinds[l.flame]) { S.kind = l.flame; S.zoom = 0; }
      if (l.search) { document.getElementById('flame-search').value = l.search; report.search(l.search); }
      redraw();
    };
  });
})();

// ---- event browser
(function () {
  var s = sec.events;
  var tools = s.appendChild(el('div', { class: 'tools' }));
  var pick = tools.appendChild(el('select', { id: 'event-type' }));
  Object.keys(D.browser).sort().forEach(function (t) { pick.appendChild(el('option', { value: t }, t + ' (' + fmtNum(D.browser[t].total) + ')')); });
  var filter = tools.appendChild(el('input', { type: 'text', id: 'event-filter', placeholder: 'Filter rows' }));
  var note = tools.appendChild(el('span', { class: 'muted' }));
  var box = s.appendChild(el('div', { class: 'browser' }));
  var sortBy = null, desc = false;
  function show() {
    var b = D.browser[pick.value];
    box.textContent = '';
    if (!b) return;
    var rows = b.rows.slice(), f = filter.value.toLowerCase();
    if (f) rows = rows.filter(function (r) { return r.some(function (c) { return c.toLowerCase().indexOf(f) >= 0; }); });
    if (sortBy != null) rows.sort(function (x, y) {
      var a = parseFloat(x[sortBy]), c = parseFloat(y[sortBy]);
      var r = !isNaN(a) && !isNaN(c) ? a - c : x[sortBy] < y[sortBy] ? -1 : x[sortBy] > y[sortBy] ? 1 : 0;
      return desc ? -r : r;
    });
    note.textContent = rows.length + ' shown of the first ' + b.rows.length + ' of ' + fmtNum(b.total) + ' events';
    var t = box.appendChild(el('table', { id: 'event-table' }));
    var hr = t.appendChild(el('tr'));
    b.fields.forEach(function (name, i) {
      var th = hr.appendChild(el('th', {}, name + (sortBy === i ? (desc ? ' \u25bc' : ' \u25b2') : '')));
      th.onclick = function () { if (sortBy === i) desc = !desc; else { sortBy = i; desc = false; } show(); };
    });
    rows.forEach(function (r) {
      var tr = t.appendChild(el('tr'));
      r.forEach(function (c) { tr.appendChild(el('td', { title: c }, c)); });
    });
  }
  pick.onchange = function () { sortBy = null; show(); };
  filter.oninput = show;
  var first = Object.keys(D.browser).sort(function (a, b) { return D.browser[b].total - D.browser[a].total; })[0];
  if (first) pick.value = first;
  show();
})();

function redraw() { drawHeat(); drawFlame(); drawLanes(); }
var report = window.report = {
  data: D,
  select: function (c0, c1) { S.sel = { c0: c0, c1: c1 }; S.zoom = 0; redraw(); },
  clear: function () { S.sel = null; S.base = null; S.zoom = 0; redraw(); },
  baseline: function (c0, c1) { S.base = { c0: c0, c1: c1 }; S.zoom = 0; redraw(); },
  setKind: function (k) { if (D.kinds[k]) { S.kind = k; S.zoom = 0; redraw(); } },
  search: function (re) {
    try { S.re = re ? new RegExp(re) : null; } catch (e) { S.re = null; }
    drawFlame();
  },
  total: function () { return flame.w ? flame.w[0] : 0; },
  matched: function () { return document.getElementById('flame-matched').getAttribute('data-share'); },
  matchedSelf: function () { return document.getElementById('flame-matched').getAttribute('data-self'); },
};
redraw();
var resizing = null;
addEventListener('resize', function () { clearTimeout(resizing); resizing = setTimeout(redraw, 100); });
})();
