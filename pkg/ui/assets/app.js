// The governance page. Every string from the server (upstream names,
// endpoint ids, principals, notes) reaches the DOM through textContent or
// setAttribute, never as markup: a spec is not trusted to write HTML.
'use strict';

const $ = (id) => document.getElementById(id);
const SVG = 'http://www.w3.org/2000/svg';
let csrf = '';
let timer = 0;
let lastAudit = '';

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}

async function api(path, opts) {
  opts = opts || {};
  opts.credentials = 'same-origin';
  opts.headers = Object.assign({}, opts.headers || {});
  if (opts.method === 'POST') opts.headers['X-CSRF-Token'] = csrf;
  const r = await fetch(path, opts);
  let body = null;
  try { body = await r.json(); } catch (e) { body = null; }
  return { status: r.status, body };
}

// The live state comes by server-sent events (api/events), one frame a
// tick; while no frame has come for a while (the stream dropped, is
// reconnecting, or cannot open), the page polls api/state each second.
let stream = null;
let lastFrame = 0;
let streamRetryAt = 0;
const STALE_MS = 2500;

function openStream() {
  if (!window.EventSource || stream || Date.now() < streamRetryAt) return;
  const es = new EventSource('api/events');
  stream = es;
  es.addEventListener('state', (ev) => {
    let st;
    try { st = JSON.parse(ev.data); } catch (e) { return; }
    lastFrame = Date.now();
    $('main').setAttribute('data-transport', 'events');
    render(st);
  });
  es.addEventListener('error', () => {
    // CONNECTING: the browser reconnects by itself. CLOSED: it was
    // answered with an error (signed out, too many viewers); the poll
    // tells which, and the stream is tried again a little later.
    if (es.readyState === EventSource.CLOSED) closeStream(5000);
  });
}

function closeStream(retryMs) {
  if (stream) stream.close();
  stream = null;
  streamRetryAt = Date.now() + (retryMs || 0);
}

function tick() {
  openStream();
  if (Date.now() - lastFrame > STALE_MS) poll();
}

function showSignIn(msg) {
  clearInterval(timer);
  timer = 0;
  closeStream(0);
  lastFrame = 0;
  $('main').hidden = true;
  $('signout').hidden = true;
  $('who').textContent = '';
  $('signin').hidden = false;
  $('signin-error').textContent = msg || '';
  $('token').focus();
}

function showPage(who) {
  $('signin').hidden = true;
  $('main').hidden = false;
  $('signout').hidden = false;
  $('who').textContent = 'signed in as ' + who;
  tick();
  if (!timer) timer = setInterval(tick, 1000);
}

async function signIn(ev) {
  ev.preventDefault();
  const tok = $('token').value;
  const r = await api('api/signin', { method: 'POST', headers: { Authorization: 'Bearer ' + tok } });
  $('token').value = '';
  if (r.status === 200 && r.body) {
    csrf = r.body.csrf;
    showPage(r.body.who);
    return;
  }
  const msg = r.body && r.body.error ? r.body.error.message : 'sign-in failed (' + r.status + ')';
  $('signin-error').textContent = msg;
}

async function signOut() {
  await api('api/signout', { method: 'POST' });
  csrf = '';
  showSignIn('Signed out.');
}

async function poll() {
  let r;
  try {
    r = await api('api/state');
  } catch (e) {
    $('status').textContent = 'specgate does not answer; retrying each second.';
    return;
  }
  if (r.status === 401) { showSignIn('Your session ended; sign in again.'); return; }
  if (r.status !== 200 || !r.body) { $('status').textContent = 'state unavailable (' + r.status + ')'; return; }
  if (Date.now() - lastFrame <= STALE_MS) return; // a frame came meanwhile
  $('main').setAttribute('data-transport', 'poll');
  render(r.body);
}

let current = null;

function render(st) {
  current = st;
  $('status').textContent = 'updated ' + new Date(st.at).toLocaleTimeString() +
    ($('main').getAttribute('data-transport') === 'events' ? ' (live)' : ' (polling)');
  renderUpstreams(st.upstreams, st.samples || {});
  renderPrincipals(st.principals || []);
  renderApprovals(st.approvals || [], st.pendingApprovals || 0);
  renderRuns(st.runs);
  renderAudit(st.audit);
}

// --- upstreams ---

const cards = new Map();

function renderUpstreams(ups, samples) {
  $('no-upstreams').hidden = ups.length > 0;
  const keep = new Set();
  for (const u of ups) {
    keep.add(u.upstream);
    let c = cards.get(u.upstream);
    if (!c) { c = makeCard(u.upstream); cards.set(u.upstream, c); $('upstreams').append(c.root); }
    fillCard(c, u, samples[u.upstream] || []);
  }
  for (const [k, c] of cards) if (!keep.has(k)) { c.root.remove(); cards.delete(k); }
}

function makeCard(key) {
  const root = el('article', { class: 'card', 'data-upstream': key });
  const h = el('h3', {}, key);
  const budget = el('div', { class: 'budget' });
  const text = el('span', {});
  const bar = el('div', { class: 'bar', role: 'img' });
  const fill = el('span', {});
  bar.append(fill);
  budget.append(text, bar);
  const figs = el('dl', { class: 'figures' });
  const learned = el('ul', { class: 'learned' });
  const shadow = el('p', { class: 'shadow' });
  const chart = svg('svg', { class: 'chart', viewBox: '0 0 600 140', preserveAspectRatio: 'none', role: 'img' });
  const title = svg('title');
  chart.append(title);
  root.append(h, budget, figs, learned, shadow, chart);
  return { root, text, bar, fill, figs, learned, shadow, chart, title };
}

// secs shows a number of seconds as people read it: whole above ten.
function secs(v) {
  return (v >= 10 ? Math.round(v) : Math.round(v * 10) / 10) + ' s';
}

function fig(dl, name, value) {
  const d = el('div');
  d.append(el('dt', {}, name), el('dd', {}, value));
  dl.append(d);
}

function fillCard(c, u, s) {
  c.root.setAttribute('data-used', u.used);
  c.root.setAttribute('data-limit', u.limit || 0);
  c.root.setAttribute('data-queue', u.queueDepth);
  c.root.setAttribute('data-upstream429s', u.upstream429s);
  c.root.classList.toggle('refusing', (u.learned || []).some((l) => l.kind === 'block'));
  if (u.limit) {
    c.text.textContent = u.used + ' / ' + u.limit + ' per ' + u.window;
    const pct = Math.min(100, Math.round(100 * u.used / u.limit));
    c.fill.style.width = pct + '%';
    c.bar.classList.toggle('full', u.used >= u.limit);
    c.bar.setAttribute('aria-label', u.used + ' of ' + u.limit + ' requests used in the window');
    c.bar.hidden = false;
  } else {
    c.text.textContent = u.used + ' requests in the window (no requests budget configured)';
    c.bar.hidden = true;
  }
  c.figs.replaceChildren();
  fig(c.figs, 'in flight', u.inFlight);
  fig(c.figs, 'queue', u.queueDepth);
  fig(c.figs, 'admitted', u.admitted);
  fig(c.figs, 'upstream 429s', u.upstream429s);
  if (u.nextAllowedInSeconds) fig(c.figs, 'next call in', secs(u.nextAllowedInSeconds));
  for (const [code, n] of Object.entries(u.refusedByCode || {})) fig(c.figs, 'refused ' + code, n);
  if (u.fallback) fig(c.figs, 'store', 'fallback share');
  c.learned.replaceChildren();
  for (const l of u.learned || []) {
    let t = (l.resource ? l.resource + ': ' : '') + l.kind;
    if (l.kind === 'block') t += ' for ' + secs(l.resetInSeconds);
    else t += ' ' + (l.remaining !== undefined ? l.remaining + ' left of ' : '') + l.limit + (l.resetInSeconds ? ', resets in ' + secs(l.resetInSeconds) : '');
    if (l.source) t += ' (from ' + l.source + ')';
    c.learned.append(el('li', { 'data-kind': l.kind, 'data-resource': l.resource || '', 'data-source': l.source || '',
      'data-limit': l.limit || 0, 'data-reset-in-seconds': l.resetInSeconds || 0 }, (l.kind === 'block' ? 'blocked by the upstream: ' : 'learned: ') + t));
  }
  if (u.shadow) {
    c.shadow.hidden = false;
    c.shadow.textContent = 'shadow budget: ' + u.shadow.wouldRefuse + ' of ' + u.shadow.calls + ' calls would have been refused' +
      (u.shadow.limit ? ' (' + u.shadow.requestsUsed + ' / ' + u.shadow.limit + ' used)' : '');
    c.shadow.setAttribute('data-would-refuse', u.shadow.wouldRefuse);
  } else {
    c.shadow.hidden = true;
  }
  drawChart(c, u, s);
}

// drawChart draws the last 10 minutes: a bar per second of admitted calls,
// the quota as a rate (dashed), the queue depth (line) and 429s (triangles).
function drawChart(c, u, s) {
  const W = 600, H = 140, top = 12, bottom = 128, span = 600;
  const now = s.length ? s[s.length - 1][0] : 0;
  const quota = u.limit && u.windowSeconds ? u.limit / u.windowSeconds : 0;
  let peak = Math.max(1, quota);
  for (const x of s) peak = Math.max(peak, x[1], x[2]);
  const y = (v) => bottom - (bottom - top) * v / peak;
  const x = (t) => W - (now - t + 1) * (W / span);
  c.chart.replaceChildren(c.title);
  c.chart.append(svg('line', { class: 'axis', x1: 0, y1: bottom, x2: W, y2: bottom }));
  let got429 = 0, admitted = 0, qmax = 0;
  const qpts = [];
  for (const p of s) {
    admitted += p[1];
    got429 += p[3];
    qmax = Math.max(qmax, p[2]);
    if (p[1] > 0) c.chart.append(svg('rect', { class: 'admitted', x: x(p[0]), y: y(p[1]), width: Math.max(W / span - 0.2, 0.6), height: bottom - y(p[1]) }));
    qpts.push(x(p[0]) + ',' + y(p[2]));
    if (p[3] > 0) {
      const cx = x(p[0]);
      c.chart.append(svg('polygon', { class: 'r429', points: (cx - 4) + ',' + (top + 8) + ' ' + (cx + 4) + ',' + (top + 8) + ' ' + cx + ',' + top }));
    }
  }
  if (qpts.length > 1) c.chart.append(svg('polyline', { class: 'queue', points: qpts.join(' ') }));
  if (quota) c.chart.append(svg('line', { class: 'quota', x1: 0, y1: y(quota), x2: W, y2: y(quota) }));
  const label = svg('text', { x: 4, y: 10 });
  label.textContent = 'peak ' + Math.round(peak * 100) / 100 + '/s';
  c.chart.append(label);
  c.title.textContent = 'Last 10 minutes: ' + admitted + ' calls admitted, ' + got429 + ' upstream 429s, queue up to ' + qmax +
    (quota ? ', quota ' + Math.round(quota * 100) / 100 + ' calls per second' : '');
  c.chart.setAttribute('aria-label', c.title.textContent);
}

// --- principals ---

function renderPrincipals(list) {
  $('no-principals').hidden = list.length > 0;
  $('principals').hidden = list.length === 0;
  const out = [];
  for (const p of list) {
    const tr = el('tr', { 'data-principal': p.principal, 'data-calls': p.calls });
    const r = p.refusedByScope || {};
    for (const v of [p.principal, p.calls, r.proxy || 0, r.upstream || 0, p.queueTurns, (p.queueWaitMs / 1000).toFixed(1) + ' s']) tr.append(el('td', {}, v));
    out.push(tr);
  }
  $('principals').tBodies[0].replaceChildren(...out);
}

// --- approvals ---

const asks = new Map();

function renderApprovals(list, total) {
  $('no-approvals').hidden = total > 0;
  $('approvals-more').hidden = total <= list.length;
  $('approvals-more').textContent = total + ' writes wait; the oldest ' + list.length + ' are shown.';
  const keep = new Set();
  for (const a of list) {
    keep.add(a.id);
    let c = asks.get(a.id);
    if (!c) { c = makeAsk(a); asks.set(a.id, c); $('approvals').append(c.root); }
    c.expires.textContent = 'expires in ' + a.expiresInSeconds + ' s';
  }
  for (const [id, c] of asks) if (!keep.has(id)) { c.root.remove(); asks.delete(id); }
}

function makeAsk(a) {
  const root = el('article', { class: 'card approval', id: 'approval-' + a.id, 'data-approval-id': a.id });
  const h = el('h3', {}, a.method + ' ' + a.path + (a.query ? '?' + a.query : ''));
  const dl = el('dl', { class: 'figures' });
  fig(dl, 'endpoint', a.endpoint);
  if (a.summary) fig(dl, 'summary', a.summary);
  fig(dl, 'asked by', a.principal);
  if (a.runId) fig(dl, 'run', a.runId);
  if (a.headers && a.headers.length) fig(dl, 'header names', a.headers.join(', '));
  if (a.pages) fig(dl, 'pages', 'up to ' + a.pages);
  if (a.size) fig(dl, 'body', a.size + ' bytes, sha256 ' + a.sha256);
  const body = el('pre', { class: 'body' }, a.body || '');
  body.hidden = !a.body;
  const expires = el('p', { class: 'status' });
  const bar = el('div', { class: 'actions' });
  const msg = el('p', { role: 'status' });
  for (const [action, label] of [['approve', 'Approve and send once'], ['decline', 'Decline']]) {
    const b = el('button', { type: 'button', 'data-action': action, 'aria-label': label + ': ' + a.method + ' ' + a.path }, label);
    b.addEventListener('click', async () => {
      for (const x of bar.querySelectorAll('button')) x.disabled = true;
      const res = await api('api/approvals/decide', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ id: a.id, action }) });
      if (res.status === 200) {
        msg.textContent = action === 'approve' ? 'approved: specgate sends it once' : 'declined: nothing is sent';
        root.setAttribute('data-decided', action);
      } else {
        msg.textContent = 'not recorded: ' + (res.body && res.body.error ? res.body.error.message : res.status);
      }
    });
    bar.append(b);
  }
  root.append(h, dl, body, expires, bar, msg);
  return { root, expires };
}

// --- runs ---

const rows = new Map();

function renderRuns(list) {
  $('no-runs').hidden = list.length > 0;
  $('runs').hidden = list.length === 0;
  const keep = new Set();
  const body = $('runs').tBodies[0];
  for (const r of list) {
    keep.add(r.runId);
    let row = rows.get(r.runId);
    if (!row) { row = makeRow(r); rows.set(r.runId, row); body.append(row.tr); }
    row.tr.setAttribute('data-done', r.done);
    row.tr.setAttribute('data-total', r.total);
    row.principal.textContent = r.principal;
    if (r.total > 0) {
      row.bar.max = r.total;
      row.bar.value = Math.min(r.done, r.total);
    } else {
      row.bar.removeAttribute('value');
    }
    row.text.textContent = r.total > 0 ? r.done + ' / ' + r.total : r.done + ' done, total unknown';
    if (r.note) row.text.textContent += ' - ' + r.note;
    const waits = r.waitingForApproval || [];
    row.tr.setAttribute('data-waiting-approval', waits.join(' '));
    row.tr.classList.toggle('waiting', waits.length > 0);
    row.waits.replaceChildren();
    for (const id of waits) {
      row.waits.append(el('a', { href: '#approval-' + id, 'aria-label': 'go to approval ' + id }, 'go to the approval'), ' ');
    }
    row.eta.textContent = waits.length ? 'waits for a person' : r.etaSeconds !== undefined && r.etaSeconds !== null ? secs(r.etaSeconds) : 'unknown';
    row.eta.setAttribute('data-eta-seconds', r.etaSeconds === undefined || r.etaSeconds === null ? '' : r.etaSeconds);
    row.calls.textContent = r.calls + ' calls' + Object.entries(r.byStatus || {}).map(([k, n]) => ', ' + k + ': ' + n).join('');
  }
  for (const [id, row] of rows) if (!keep.has(id)) { row.tr.remove(); rows.delete(id); }
}

function makeRow(r) {
  const tr = el('tr', { 'data-run-id': r.runId });
  const id = el('td', {}, r.runId);
  const principal = el('td');
  const prog = el('td');
  const bar = el('progress', { 'aria-label': 'progress of run ' + r.runId });
  const text = el('span', {});
  const waits = el('span', { class: 'waits' });
  prog.append(bar, ' ', text, ' ', waits);
  const eta = el('td');
  const calls = el('td');
  const act = el('td');
  const btn = el('button', { type: 'button', 'data-action': 'cancel', 'aria-label': 'cancel run ' + r.runId }, 'Cancel');
  btn.addEventListener('click', async () => {
    btn.disabled = true;
    const res = await api('api/runs/cancel', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ runId: r.runId }) });
    $('status').textContent = res.status === 200 ? 'run ' + r.runId + ' cancelled' : 'cancel failed: ' + (res.body && res.body.error ? res.body.error.message : res.status);
    if (res.status !== 200) btn.disabled = false;
  });
  act.append(btn);
  tr.append(id, principal, prog, eta, calls, act);
  return { tr, principal, bar, text, waits, eta, calls };
}

// --- audit ---

function options(sel, values) {
  const cur = sel.value;
  const have = new Set([...sel.options].map((o) => o.value));
  for (const v of values) if (v && !have.has(v)) sel.append(el('option', { value: v }, v));
  sel.value = cur;
}

function codeOf(a) {
  return a.outcome || '';
}

function renderAudit(lines) {
  const key = JSON.stringify([lines.length, lines.length ? lines[lines.length - 1] : null, $('f-principal').value, $('f-code').value]);
  if (key === lastAudit) return;
  lastAudit = key;
  options($('f-principal'), lines.map((a) => a.principal));
  options($('f-code'), lines.map(codeOf));
  const p = $('f-principal').value, code = $('f-code').value;
  const body = $('audit').tBodies[0];
  const out = [];
  for (const a of lines.slice().reverse()) {
    if (p && a.principal !== p) continue;
    if (code && codeOf(a) !== code) continue;
    const tr = el('tr', { 'data-principal': a.principal || '', 'data-code': codeOf(a) });
    const when = el('td', { title: a.time || '' }, (a.time || '').slice(11, 23));
    tr.append(when);
    const by = a.by ? ' by ' + a.by + (a.from ? ' from ' + a.from : '') : '';
    const what = a.endpoint + (a.runId ? ' (' + a.runId + ')' : '');
    for (const v of [a.principal, what, a.outcome + (a.approval ? ' (' + a.approval + ')' : '') + by, a.status, a.scope, a.queueWaitMs, a.latencyMs]) {
      tr.append(el('td', {}, v === undefined || v === null ? '' : v));
    }
    out.push(tr);
  }
  body.replaceChildren(...out);
  $('no-audit').hidden = lines.length > 0;
  $('audit').hidden = lines.length === 0;
}

async function start() {
  $('signin-form').addEventListener('submit', signIn);
  $('signout').addEventListener('click', signOut);
  $('f-principal').addEventListener('change', () => renderAuditAgain());
  $('f-code').addEventListener('change', () => renderAuditAgain());
  const r = await api('api/session');
  if (r.status === 200 && r.body) {
    csrf = r.body.csrf;
    showPage(r.body.who);
  } else {
    showSignIn('');
  }
}

function renderAuditAgain() {
  lastAudit = '';
  if (current) renderAudit(current.audit);
}

document.addEventListener('DOMContentLoaded', start);
