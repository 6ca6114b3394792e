// The governance page (/ui) in a real browser: Debian's chromium driven by
// puppeteer-core, everything on loopback. It signs in, watches the page
// live by server-sent events (and by the 1 s poll while the stream is
// gone), reads a budget's used and limit after N calls and compares them
// with rate_limit_status, sees the queue of a busy upstream, watches a
// run's progress advance, approves one write (the upstream receives it
// once) and declines another (nothing sent), sees a run wait for an
// approval in its progress, cancels a run, drives an upstream into 429s
// and compares the page's 429 count and block with rate_limit_status, and
// records that the page loaded nothing from another origin. Screenshots
// of each view are saved: the upstream idle, busy and refusing among them.
//
// SPECGATE_BIN names the binary (default ../../bin/specgate); CHROMIUM the
// browser (default /usr/bin/chromium); SPECGATE_SCREENSHOTS the directory
// the screenshots go to (default ./screenshots).
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import puppeteer from "puppeteer-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const bin = process.env.SPECGATE_BIN || path.join(root, "bin/specgate");
const chromium = process.env.CHROMIUM || "/usr/bin/chromium";
const shots = process.env.SPECGATE_SCREENSHOTS || path.join(here, "screenshots");
const token = "admin-" + Math.random().toString(36).slice(2);

// startRefusing is an upstream that refuses every call with 429, a
// Retry-After and the X-RateLimit headers of a spent quota.
function startRefusing() {
  let seen = 0;
  const server = http.createServer((req, res) => {
    seen++;
    req.resume();
    res.writeHead(429, {
      "content-type": "application/json", "retry-after": "120",
      "x-ratelimit-limit": "5", "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(Math.floor(Date.now() / 1000) + 120),
    });
    res.end('{"message":"rate limit exceeded"}');
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, seen: () => seen, port: server.address().port })));
}

// startUpstream answers the petstore's pet lookups and records every
// request it receives.
function startUpstream() {
  const seen = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      seen.push({ method: req.method, url: req.url, body });
      res.writeHead(200, { "content-type": "application/json" });
      if (req.method === "POST") res.end(body || "{}");
      else res.end(JSON.stringify({ id: Number(req.url.split("/").pop()) || 1, name: "pet", status: "available" }));
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, seen, port: server.address().port })));
}

// hostile is a spec whose strings try to write HTML into the page.
const hostile = `openapi: 3.0.3
info: {title: "<b>hostile</b>", version: "1"}
paths:
  /things/{id}:
    post:
      operationId: makeThing
      summary: "<img src=x onerror=\\"window.pwned=1\\"><script>window.pwned=2</script>"
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses: {"200": {description: ok}}
`;

function config(port, refusing, dir) {
  const file = path.join(dir, "config.yaml");
  fs.writeFileSync(path.join(dir, "hostile.yaml"), hostile);
  fs.writeFileSync(file, `disable_ratelimiter: true
audit_log: ${JSON.stringify(path.join(dir, "audit.jsonl"))}
approve_writes: true
approvals: {channel: auto, ttl: 2m}
scripts: {answer_within: 1s, allow_writes: true}
specs:
  - name: pets
    location: ${JSON.stringify(path.join(root, "testdata/petstore-v3.yaml"))}
    base_url: http://127.0.0.1:${port}/api/v3
  - name: hostile
    location: ${JSON.stringify(path.join(dir, "hostile.yaml"))}
    base_url: http://127.0.0.1:${port}/api/v3
  - name: refusing
    location: ${JSON.stringify(path.join(root, "testdata/petstore-v3.yaml"))}
    base_url: http://127.0.0.1:${refusing}/api/v3
upstreams:
  - match: 127.0.0.1:${port}
    requests_per_window: 100
    window: 1m
    min_interval: 400ms
  - match: 127.0.0.1:${refusing}
    requests_per_window: 50
    window: 1m
http:
  auth:
    scopes: {read: "specgate:read", invoke: "specgate:invoke", admin: "specgate:admin"}
    tokens:
      - {token: ${JSON.stringify(token)}, subject: ada, scopes: ["specgate:invoke", "specgate:admin"]}
`);
  return file;
}

// startSpecgate serves on a free loopback port and resolves with its base
// URL once it prints where it serves.
function startSpecgate(cfg, dir) {
  const child = spawn(bin, ["serve", "--config", cfg, "--no-cache", "--http", "127.0.0.1:0"], {
    env: { ...process.env, XDG_CACHE_HOME: dir }, stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  return new Promise((resolve, reject) => {
    child.stderr.on("data", (d) => {
      err += d;
      const m = err.match(/serving MCP \(streamable HTTP\) at (http:\/\/127\.0\.0\.1:\d+)\/mcp/);
      if (m && /ready/.test(err)) resolve({ child, base: m[1] });
    });
    child.on("exit", (code) => reject(new Error("specgate exited " + code + ": " + err)));
  });
}

let rpcID = 0;
// call makes one MCP tool call over streamable HTTP and returns its JSON.
async function call(base, name, args) {
  const r = await fetch(base + "/mcp", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: "Bearer " + token },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++rpcID, method: "tools/call", params: { name, arguments: args } }),
  });
  let text = await r.text();
  if (!text.trimStart().startsWith("{")) {
    const lines = text.split("\n").filter((l) => l.startsWith("data: "));
    text = lines[lines.length - 1].slice(6);
  }
  const msg = JSON.parse(text);
  assert.ok(msg.result, "tools/call " + name + ": " + text);
  return { isError: !!msg.result.isError, body: JSON.parse(msg.result.content[0].text) };
}

async function until(what, fn, ms = 20000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// postsTo is the POSTs the upstream received.
const postsTo = (up) => up.seen.filter((r) => r.method === "POST");

async function liveByEvents({ page }) {
  // Live by server-sent events; with the stream gone, the poll takes over
  // until the page opens a new one.
  await page.waitForSelector('#main[data-transport="events"]');
  await page.evaluate(() => { stream.close(); stream = null; streamRetryAt = Date.now() + 3000; });
  await page.waitForSelector('#main[data-transport="poll"]', { timeout: 10000 });
  await page.waitForSelector('#main[data-transport="events"]', { timeout: 10000 });
}

async function budgetAndBusy({ page, sg, up, shot }) {
  const sel = `[data-upstream="127.0.0.1:${up.port}"]`;
  // A budget's used and limit after N calls, as rate_limit_status says.
  const N = 3;
  for (let i = 1; i <= N; i++) {
    const r = await call(sg.base, "invoke", { endpointId: "pets.getPetById", parameters: { petId: i } });
    assert.equal(r.isError, false, JSON.stringify(r.body));
  }
  const st = await call(sg.base, "rate_limit_status", {});
  const want = st.body.upstreams.find((u) => u.upstream === "127.0.0.1:" + up.port);
  assert.ok(want, JSON.stringify(st.body));
  const seen = await until("the page to show the budget", () => page.$eval(sel, (e) => ({ used: e.dataset.used, limit: e.dataset.limit })).then(
    (v) => (Number(v.used) === want.requestsUsed ? v : null), () => null));
  assert.equal(Number(seen.used), want.requestsUsed);
  assert.equal(Number(seen.limit), want.limits.requestsPerWindow);
  assert.equal(want.requestsUsed, N);
  const calls = await until("the principal's calls", () => page.$eval('#principals tr[data-principal="ada"]', (e) => Number(e.dataset.calls)).catch(() => null));
  assert.equal(calls, N);
  await shot("3-budget.png");

  // The upstream busy: calls queue behind its min_interval.
  const burst = [];
  for (let i = 0; i < 8; i++) burst.push(call(sg.base, "invoke", { endpointId: "pets.getPetById", parameters: { petId: 100 + i } }));
  await until("the queue on the page", () => page.$eval(sel, (e) => Number(e.dataset.queue) > 0).catch(() => false));
  await shot("4-busy.png");
  for (const r of await Promise.all(burst)) assert.equal(r.isError, false, JSON.stringify(r.body));
}

async function runAdvances({ page, sg, shot }) {
  // A run's progress advances on the page.
  const run = await call(sg.base, "run_script", { code: `
for (let i = 1; i <= 12; i++) {
  await api.invoke("pets.getPetById", {parameters: {petId: i}});
  api.progress(i, 12, "pet " + i);
}
return "done";` });
  assert.equal(run.body.status, "running", JSON.stringify(run.body));
  const row = `tr[data-run-id="${run.body.runId}"]`;
  const first = await until("the run on the page", () => page.$eval(row, (e) => Number(e.dataset.done)).catch(() => null).then((d) => (d === null ? null : { d })));
  const later = await until("the run to advance", () => page.$eval(row, (e) => ({ done: Number(e.dataset.done), total: Number(e.dataset.total) }))
    .catch(() => null).then((v) => (v && v.done > first.d ? v : null)));
  assert.equal(later.total, 12);
  await shot("5-run.png");
  const res = await call(sg.base, "script_result", { runId: run.body.runId, waitSeconds: 30 });
  assert.equal(res.body.status, "done", JSON.stringify(res.body));
}

async function approveAndDecline({ page, sg, up, shot }) {
  // Approve one write on the page: the upstream receives it once.
  const posts = () => postsTo(up);
  const approved = call(sg.base, "invoke", { endpointId: "pets.addPet", requestBody: { name: "approved-pet", photoUrls: [] } });
  const card = await until("the write on the page", () => page.$("[data-approval-id]"));
  const firstID = await card.evaluate((e) => e.dataset.approvalId);
  const text = await card.evaluate((e) => e.textContent);
  assert.match(text, /POST \/pet/);
  assert.match(text, /approved-pet/);
  assert.equal(posts().length, 0, "sent before approval");
  await shot("6-approval.png");
  await card.$eval('[data-action="approve"]', (b) => b.click());
  const a = await approved;
  assert.equal(a.isError, false, JSON.stringify(a.body));
  assert.equal(posts().length, 1);
  assert.match(posts()[0].body, /approved-pet/);

  // Decline another: nothing sent.
  const declined = call(sg.base, "invoke", { endpointId: "pets.addPet", requestBody: { name: "declined-pet", photoUrls: [] } });
  const card2 = await until("the second write on the page", () => page.$(`[data-approval-id]:not([data-approval-id="${firstID}"])`));
  await card2.$eval('[data-action="decline"]', (b) => b.click());
  const d = await declined;
  assert.equal(d.isError, true);
  assert.equal(d.body.error.code, "not_approved");
  assert.match(d.body.error.message, /declined on the governance page/);
  assert.equal(posts().length, 1, "a declined write was sent");

  // A spec's strings are text on the page, never markup.
  const evil = call(sg.base, "invoke", { endpointId: "hostile.makeThing", parameters: { id: "<i>x</i>" } });
  const card3 = await until("the hostile write on the page", () => page.$(`[data-approval-id]:not([data-approval-id="${firstID}"])`).then(async (c) => {
    if (!c) return null;
    const t = await c.evaluate((e) => e.textContent);
    return /makeThing/.test(t) ? c : null;
  }));
  const shown = await card3.evaluate((e) => ({ text: e.textContent, imgs: e.querySelectorAll("img, script, i, b").length }));
  assert.match(shown.text, /<img src=x onerror=/);
  assert.equal(shown.imgs, 0, "a spec's summary became markup");
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  await shot("7-hostile.png");
  await card3.$eval('[data-action="decline"]', (b) => b.click());
  assert.equal((await evil).body.error.code, "not_approved");
  assert.equal(up.seen.filter((r) => r.url.includes("things")).length, 0);
}

async function runWaitsForApproval({ page, sg, up, shot }) {
  const posts = () => postsTo(up);
  // A run whose write waits for approval says so in its progress, naming
  // the approval, on the page and to script_result.
  const waiter = await call(sg.base, "run_script", { code: `
await api.invoke("pets.getPetById", {parameters: {petId: 1}});
api.progress(1, 2, "looked up");
await api.invoke("pets.addPet", {requestBody: {name: "run-pet", photoUrls: []}});
api.progress(2, 2, "added");
return "added";` });
  assert.equal(waiter.body.status, "running", JSON.stringify(waiter.body));
  const wrow = `tr[data-run-id="${waiter.body.runId}"]`;
  const waitID = await until("the run waiting for approval", () => page.$eval(wrow, (e) => e.dataset.waitingApproval).catch(() => null));
  const wcard = await page.$(`[data-approval-id="${waitID}"]`);
  assert.ok(wcard, "the run's approval is not on the page");
  assert.match(await wcard.evaluate((e) => e.textContent), new RegExp(waiter.body.runId));
  assert.match(await page.$eval(wrow, (e) => e.textContent), new RegExp("waiting for a person to approve " + waitID));
  const mid = await call(sg.base, "script_result", { runId: waiter.body.runId, waitSeconds: 0 });
  assert.equal(mid.body.status, "running");
  assert.deepEqual(mid.body.progress.waitingForApproval, [waitID]);
  assert.match(mid.body.progress.note, new RegExp(waitID));
  await shot("8-run-waiting-approval.png");
  const before = posts().length;
  await wcard.$eval('[data-action="approve"]', (b) => b.click());
  const wres = await call(sg.base, "script_result", { runId: waiter.body.runId, waitSeconds: 30 });
  assert.equal(wres.body.status, "done", JSON.stringify(wres.body));
  assert.equal(posts().length, before + 1);
}

async function cancelRun({ page, sg }) {
  // Cancel a run from the page.
  const long = await call(sg.base, "run_script", { code: `
for (let i = 1; i <= 100; i++) { await api.invoke("pets.getPetById", {parameters: {petId: i}}); api.progress(i, 100, "pet " + i); }
return "done";` });
  assert.equal(long.body.status, "running", JSON.stringify(long.body));
  const lrow = `tr[data-run-id="${long.body.runId}"]`;
  await until("the long run on the page", () => page.$(lrow));
  await page.$eval(lrow + ' [data-action="cancel"]', (b) => b.click());
  const cancelled = await call(sg.base, "script_result", { runId: long.body.runId, waitSeconds: 30 });
  assert.equal(cancelled.body.status, "cancelled", JSON.stringify(cancelled.body));
  await until("the cancelled run to leave the page", () => page.$(lrow).then((e) => e === null));
  return long.body.runId;
}

async function refusingUpstream({ page, sg, refusing, shot }) {
  // The upstream refusing: the page's 429 count and block are what
  // rate_limit_status says.
  const rsel = `[data-upstream="127.0.0.1:${refusing.port}"]`;
  const refused = await call(sg.base, "invoke", { endpointId: "refusing.getPetById", parameters: { petId: 1 } });
  assert.equal(refused.isError, true);
  assert.equal(refused.body.error.code, "upstream_rate_limit", JSON.stringify(refused.body));
  await call(sg.base, "invoke", { endpointId: "refusing.getPetById", parameters: { petId: 2 } });
  const rst = await call(sg.base, "rate_limit_status", {});
  const rwant = rst.body.upstreams.find((u) => u.upstream === "127.0.0.1:" + refusing.port);
  assert.ok(rwant && rwant.upstream429s > 0, JSON.stringify(rst.body));
  const block = (rwant.learned || []).find((l) => l.blockSource);
  assert.ok(block, "rate_limit_status shows no block: " + JSON.stringify(rwant));
  const rseen = await until("the page to show the 429s and the block", () => page.$eval(rsel, (e) => {
    const b = e.querySelector('li[data-kind="block"]');
    return { n: Number(e.dataset.upstream429s), source: b && b.dataset.source, reset: b && Number(b.dataset.resetInSeconds), text: e.textContent };
  }).then((v) => (v.n === rwant.upstream429s && v.source ? v : null), () => null));
  assert.equal(rseen.n, rwant.upstream429s);
  assert.equal(rseen.source, block.blockSource);
  assert.ok(Math.abs(rseen.reset - block.blockedForSeconds) <= 3, `page block ${rseen.reset}s, rate_limit_status ${block.blockedForSeconds}s`);
  const learnedReq = (rwant.learned || []).find((l) => l.requests);
  if (learnedReq) {
    const lim = await page.$eval(rsel, (e) => { const l = e.querySelector('li[data-kind="requests"]'); return l && Number(l.dataset.limit); });
    assert.equal(lim, learnedReq.requests.limit);
  }
  assert.equal(refusing.seen(), rwant.upstream429s, "the upstream heard more calls than it refused");
  await shot("9-refusing.png");
}

async function auditSaysWho({ page, dir, shot, cancelledRun }) {
  // The audit tail says who approved, declined and cancelled, and from where.
  await until("the audit tail", () => page.$$eval("#audit tbody tr", (rs) => rs.length > 0));
  const rows = await page.$$eval("#audit tbody tr", (rs) => rs.map((r) => r.textContent));
  assert.ok(rows.some((r) => r.includes(cancelledRun) && /cancelled \(on the governance page\) by ada from 127\.0\.0\.1/.test(r)),
    "the page's audit tail does not show the cancel with who and from where");
  assert.ok(rows.some((r) => /approved by ada from 127\.0\.0\.1/.test(r)), "the page's audit tail does not show who approved");
  await shot("10-audit.png");
  const audit = fs.readFileSync(path.join(dir, "audit.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const byPage = (outcome) => audit.filter((l) => l.outcome === outcome && l.by === "ada" && l.from === "127.0.0.1");
  assert.ok(byPage("approved").length >= 2, "approvals on the page are not audited with who and from where");
  assert.ok(byPage("not_approved").length >= 2, "declines on the page are not audited with who and from where");
  const cancelLine = byPage("cancelled").find((l) => l.runId === cancelledRun);
  assert.ok(cancelLine, "the cancel is not audited with who and from where");
  assert.equal(cancelLine.principal, "ada");
}

test("the governance page in chromium", async (t) => {
  fs.mkdirSync(shots, { recursive: true });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "specgate-ui-"));
  const up = await startUpstream();
  const refusing = await startRefusing();
  const sg = await startSpecgate(config(up.port, refusing.port, dir), dir);
  const browser = await puppeteer.launch({
    executablePath: chromium, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps"],
  });
  t.after(async () => { await browser.close(); sg.child.kill(); up.server.close(); refusing.server.close(); });
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  const origin = new URL(sg.base).origin;
  const foreign = [];
  const problems = [];
  page.on("request", (req) => {
    const u = req.url();
    if (!u.startsWith(origin + "/") && !u.startsWith("data:")) foreign.push(u);
  });
  page.on("console", (m) => { if (m.type() === "error" && !/401/.test(m.text())) problems.push(m.text()); });
  page.on("pageerror", (e) => problems.push(String(e)));
  const shot = (name) => page.screenshot({ path: path.join(shots, name), fullPage: true });
  const env = { page, sg, up, refusing, dir, shot };

  // Nothing of the state before sign-in, by poll or by stream.
  assert.equal((await fetch(sg.base + "/ui/api/state")).status, 401);
  assert.equal((await fetch(sg.base + "/ui/api/events")).status, 401);

  await page.goto(sg.base + "/ui/");
  await page.waitForSelector("#token", { visible: true });
  await page.screenshot({ path: path.join(shots, "1-signin.png") });
  await page.type("#token", token);
  await page.keyboard.press("Enter"); // the form works from the keyboard
  await page.waitForSelector("#main", { visible: true });

  await liveByEvents(env);

  // The upstream idle.
  const sel = `[data-upstream="127.0.0.1:${up.port}"]`;
  await page.waitForSelector(sel);
  await shot("2-idle.png");

  await budgetAndBusy(env);
  await runAdvances(env);
  await approveAndDecline(env);
  await runWaitsForApproval(env);
  const cancelledRun = await cancelRun(env);
  await refusingUpstream(env);
  await auditSaysWho({ ...env, cancelledRun });

  // Dark, and a phone.
  await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "dark" }]);
  await shot("11-dark.png");
  await page.setViewport({ width: 390, height: 844 });
  await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "light" }]);
  await shot("12-phone.png");

  assert.deepEqual(foreign, [], "the page loaded from another origin");
  assert.deepEqual(problems, [], "the page logged errors");
  console.log("screenshots in " + shots);
});
