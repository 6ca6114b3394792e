// End-to-end: the official TypeScript MCP SDK client drives the built
// specgate binary over stdio, and over streamable HTTP with JWTs from a
// loopback issuer, against local upstreams that record every request they
// receive.
//
// SPECGATE_BIN names the binary (default ../../bin/specgate).
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { spawn } from "node:child_process";
import { SignJWT, exportJWK, generateKeyPair } from "jose";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const bin = process.env.SPECGATE_BIN || path.join(root, "bin/specgate");

function startUpstream() {
  const received = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      received.push({ method: req.method, url: req.url, headers: req.headers, body });
      if (req.url.startsWith("/api/v3/pet/") && req.method === "GET") {
        const id = Number(req.url.split("/").pop());
        res.writeHead(200, { "content-type": "application/json", "x-ratelimit-remaining": "99" });
        res.end(JSON.stringify({ id, name: "doggie", status: "available" }));
        return;
      }
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ message: "not found" }));
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => resolve({ server, received, url: `http://127.0.0.1:${server.address().port}/api/v3` }));
  });
}

function structured(result) {
  if (result.structuredContent) return result.structuredContent;
  return JSON.parse(result.content[0].text);
}

test("TypeScript SDK client: search, inspect, invoke, cooldown", async () => {
  const upstream = await startUpstream();
  const transport = new StdioClientTransport({
    command: bin,
    args: ["serve", "--spec", path.join(root, "testdata/petstore-v3.yaml"), "--base-url", upstream.url,
      "--rate-limit-interval", "1h", "--no-cache"],
    stderr: "ignore",
  });
  const client = new Client({ name: "ts-e2e", version: "1.0.0" });
  try {
    await client.connect(transport);

    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const want of ["search", "inspect", "invoke", "rate_limit_status"]) {
      assert.ok(names.includes(want), `tools/list lacks ${want}: ${names}`);
    }
    for (const t of tools) {
      const a = t.annotations || {};
      for (const hint of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]) {
        assert.equal(typeof a[hint], "boolean", `${t.name} lacks ${hint}`);
      }
    }

    // prompts/list and prompts/get: the operator's flows, with live data.
    const { prompts } = await client.listPrompts();
    assert.deepEqual(prompts.map((p) => p.name).sort(), ["diagnose_429", "review_task", "setup_limits"]);
    const setup = await client.getPrompt({ name: "setup_limits", arguments: { spec: "petstore-v3" } });
    assert.equal(setup.messages.length, 1);
    assert.equal(setup.messages[0].role, "user");
    assert.match(setup.messages[0].content.text, /petstore-v3/);
    const diagnose = await client.getPrompt({ name: "diagnose_429", arguments: { endpointId: "petstore-v3.getPetById" } });
    assert.match(diagnose.messages[0].content.text, /rate_limit_status/);
    await assert.rejects(client.getPrompt({ name: "setup_limits", arguments: { spec: "nosuch" } }), /no spec "nosuch"/);

    const found = structured(await client.callTool({ name: "search", arguments: { query: "find a pet by its id", limit: 5 } }));
    const ids = found.endpoints.map((e) => e.id);
    assert.ok(ids.includes("petstore-v3.getPetById"), `search hits: ${ids}`);

    const contract = structured(await client.callTool({ name: "inspect", arguments: { endpointId: "petstore-v3.getPetById" } }));
    assert.equal(contract.method, "GET");
    assert.equal(contract.path, "/pet/{petId}");

    const ok = await client.callTool({ name: "invoke", arguments: { endpointId: "petstore-v3.getPetById", parameters: { petId: 7 } } });
    assert.ok(!ok.isError, JSON.stringify(ok));
    const res = structured(ok);
    assert.equal(res.statusCode, 200);
    assert.equal(res.body.id, 7);
    assert.equal(upstream.received.length, 1);
    assert.equal(upstream.received[0].url, "/api/v3/pet/7");

    // Within the cooldown: a structured rate_limit error, nothing sent.
    const refused = await client.callTool({ name: "invoke", arguments: { endpointId: "petstore-v3.getPetById", parameters: { petId: 8 } } });
    assert.equal(refused.isError, true);
    const err = structured(refused).error;
    assert.equal(err.code, "rate_limit");
    assert.equal(err.scope, "proxy");
    assert.ok(err.retryAfterSeconds > 0);
    assert.equal(upstream.received.length, 1);

    // Bad arguments: validation_failed, costs nothing.
    const bad = await client.callTool({ name: "invoke", arguments: { endpointId: "petstore-v3.findPetsByStatus", parameters: { nope: 1 } } });
    assert.equal(bad.isError, true);
    assert.equal(structured(bad).error.code, "validation_failed");
    assert.equal(upstream.received.length, 1);
  } finally {
    await client.close();
    upstream.server.close();
  }
});

// A GitHub-style page: 30 copies of GitHub's own pull-request example
// (~670 KB) with a Link header to page 2 on the same origin.
function startGitHubUpstream() {
  const pr = JSON.parse(fs.readFileSync(path.join(root, "testdata/github-pull-request.json"), "utf8"));
  const received = [];
  let page = null;
  const server = http.createServer((req, res) => {
    received.push({ method: req.method, url: req.url });
    const u = new URL(req.url, `http://${req.headers.host}`);
    if (req.method !== "GET" || u.pathname !== "/github/repos/rails/rails/pulls") {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ message: "Not Found" }));
      return;
    }
    const next = `http://${req.headers.host}/github/repositories/1300192/pulls?page=2&per_page=30`;
    res.writeHead(200, { "content-type": "application/json; charset=utf-8", link: `<${next}>; rel="next"` });
    res.end(JSON.stringify(page));
  });
  page = Array.from({ length: 30 }, (_, i) => ({ ...pr, id: i + 1, number: i + 1, title: `${pr.title} #${i + 1}` }));
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => resolve({ server, received, page, url: `http://127.0.0.1:${server.address().port}` }));
  });
}

test("TypeScript SDK client: a large page is previewed, stored, and read back with jq", async () => {
  const upstream = await startGitHubUpstream();
  const transport = new StdioClientTransport({
    command: bin,
    args: ["serve", "--spec", path.join(root, "testdata/paging.yaml"), "--base-url", upstream.url,
      "--rate-limit-interval", "1h", "--no-cache"],
    stderr: "ignore",
  });
  const client = new Client({ name: "ts-e2e", version: "1.0.0" });
  try {
    await client.connect(transport);
    const wire = JSON.stringify(upstream.page).length;
    assert.ok(wire > 600_000, `the page is ${wire} bytes`);

    const got = await client.callTool({ name: "invoke", arguments: { endpointId: "paging.listPulls", parameters: { owner: "rails", repo: "rails" } } });
    assert.ok(!got.isError, got.content[0].text.slice(0, 500));
    const text = got.content[0].text;
    assert.ok(Buffer.byteLength(text) <= 16 * 1024, `answer text is ${Buffer.byteLength(text)} bytes`);
    const res = JSON.parse(text);
    assert.deepEqual(res, got.structuredContent);
    assert.equal(res.statusCode, 200);
    assert.equal(res.shaped.items, 30);
    assert.equal(res.shaped.path, ".");
    assert.match(res.responseId, /^r_/);
    assert.equal(res.nextPage.parameters.page, 2);
    assert.equal(res.nextPage.parameters.per_page, 30);
    assert.ok(res.hint.includes(res.responseId), res.hint);
    assert.equal(upstream.received.length, 1);

    const read = await client.callTool({ name: "read_response", arguments: { responseId: res.responseId, jq: "[.[] | {number, title, user: .user.login}]" } });
    assert.ok(!read.isError, read.content[0].text.slice(0, 500));
    const body = JSON.parse(read.content[0].text).body;
    assert.deepEqual(body, upstream.page.map((p) => ({ number: p.number, title: p.title, user: p.user.login })));
    assert.equal(upstream.received.length, 1, "read_response called the upstream");

    // offset/limit windows over the main array, each within its budget,
    // give back the whole page.
    const items = [];
    for (let offset = 0, calls = 0; offset !== undefined; calls++) {
      assert.ok(calls <= 30, "nextOffset does not end");
      const w = await client.callTool({ name: "read_response", arguments: { responseId: res.responseId, offset, limit: 1, maxBytes: 48000 } });
      assert.ok(!w.isError, w.content[0].text.slice(0, 500));
      assert.ok(Buffer.byteLength(w.content[0].text) <= 48000, `window at ${offset} is ${Buffer.byteLength(w.content[0].text)} bytes`);
      const win = JSON.parse(w.content[0].text);
      assert.equal(win.shaped, undefined, `window at ${offset} was previewed`);
      items.push(...win.body);
      offset = win.nextOffset;
    }
    assert.deepEqual(items, upstream.page);
    assert.equal(upstream.received.length, 1, "read_response called the upstream");
  } finally {
    await client.close();
    upstream.server.close();
  }
});

// Every tool declares an output schema; the SDK validates structuredContent
// against it on every answer, error results included. Call each tool once
// for a success and once for an error.
test("TypeScript SDK client: every tool, success and error, passes its output schema", async () => {
  const upstream = await startUpstream();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "specgate-ts-"));
  const client = new Client({ name: "ts-e2e-schemas", version: "1.0.0" });
  try {
  const config = path.join(dir, "specgate.yaml");
  fs.writeFileSync(config, [
    "allow_runtime_tuning: true",
    "rate_limit_interval: 1h",
    "specs:",
    "  - name: petstore-v3",
    `    location: ${JSON.stringify(path.join(root, "testdata/petstore-v3.yaml"))}`,
    `    base_url: ${JSON.stringify(upstream.url)}`,
    "",
  ].join("\n"));
  const transport = new StdioClientTransport({ command: bin, args: ["serve", "--config", config, "--no-cache"], stderr: "ignore" });
    await client.connect(transport);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    assert.deepEqual(names, ["begin_task", "end_task", "inspect", "invoke", "rate_limit_status", "read_response", "run_script", "script_result", "search", "set_rate_limit"]);
    for (const t of tools) {
      assert.equal(t.outputSchema?.type, "object", `${t.name} declares no output schema`);
    }
    const call = async (name, args, wantError) => {
      // callTool throws when structuredContent does not match the schema.
      const res = await client.callTool({ name, arguments: args });
      assert.equal(Boolean(res.isError), wantError, `${name} ${JSON.stringify(args)}: ${JSON.stringify(res)}`);
      assert.ok(res.structuredContent, `${name} sent no structuredContent`);
      return res.structuredContent;
    };
    const id = "petstore-v3.getPetById";
    await call("search", { query: "find a pet by its id" }, false);
    assert.equal((await call("search", { query: "pets", limit: 99 }, true)).error.code, "validation_failed");
    await call("inspect", { endpointId: id }, false);
    assert.equal((await call("inspect", { endpointId: "petstore-v3.nope" }, true)).error.code, "not_found");
    const ok = await call("invoke", { endpointId: id, parameters: { petId: 7 } }, false);
    assert.equal(ok.statusCode, 200);
    assert.equal((await call("invoke", { endpointId: id, parameters: { petId: 8 } }, true)).error.code, "rate_limit");
    await call("read_response", { responseId: ok.responseId, jq: ".name" }, false);
    assert.equal((await call("read_response", { responseId: "r_AAAAAAAAAAAAAAAAAAAAAA" }, true)).error.code, "not_found");
    await call("rate_limit_status", { endpointId: id }, false);
    assert.equal((await call("rate_limit_status", { spec: "nope" }, true)).error.code, "not_found");
    await call("set_rate_limit", { endpointId: id, rateLimitInterval: "5s" }, false);
    assert.equal((await call("set_rate_limit", { endpointId: id, rateLimitInterval: "soon" }, true)).error.code, "validation_failed");
    const run = await call("run_script", { code: `const hits = await api.search("find pet by id", {limit: 3}); return hits.endpoints.length;` }, false);
    assert.ok(run.calls.total >= 1, JSON.stringify(run));
    assert.equal((await call("run_script", { code: "const = 1;" }, true)).error.code, "script_error");
    assert.equal((await call("script_result", { runId: run.runId, waitSeconds: 0 }, false)).status, "done");
    assert.equal((await call("script_result", { runId: "run-0123456789ab" }, true)).error.code, "not_found");
    const task = await call("begin_task", { name: "schemas" }, false);
    assert.equal((await call("begin_task", { name: " " }, true)).error.code, "validation_failed");
    await call("end_task", { taskId: task.taskId, concurrency: 2 }, false);
    assert.equal((await call("end_task", { taskId: task.taskId }, true)).error.code, "not_found");
  } finally {
    await client.close();
    upstream.server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// A loopback authorization server: RFC 8414 metadata and a JWKS holding one
// RS256 key; sign() issues tokens for the resource with jose.
async function startIssuer(resource) {
  const { publicKey, privateKey } = await generateKeyPair("RS256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256", use: "sig" };
  let url;
  const server = http.createServer((req, res) => {
    res.setHeader("content-type", "application/json");
    if (req.url === "/.well-known/oauth-authorization-server") {
      res.end(JSON.stringify({ issuer: url, jwks_uri: `${url}/jwks` }));
    } else if (req.url === "/jwks") {
      res.end(JSON.stringify({ keys: [jwk] }));
    } else {
      res.writeHead(404);
      res.end("{}");
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${server.address().port}`;
  const sign = (sub, org) => new SignJWT({ org, scope: "specgate:read specgate:invoke" })
    .setProtectedHeader({ alg: "RS256", kid: "k1" })
    .setIssuer(url).setAudience(resource).setSubject(sub)
    .setIssuedAt().setExpirationTime("1h")
    .sign(privateKey);
  return { server, url, sign };
}

// serveHTTP starts `specgate serve --http 127.0.0.1:0` and resolves with
// its /mcp URL once it prints it.
function serveHTTP(args, env) {
  const child = spawn(bin, ["serve", "--http", "127.0.0.1:0", ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  const url = new Promise((resolve, reject) => {
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
      const m = stderr.match(/serving MCP \(streamable HTTP\) at (\S+)/);
      if (m) resolve(m[1]);
    });
    child.on("exit", (code) => reject(new Error(`specgate exited ${code}: ${stderr}`)));
  });
  return { child, url, stderr: () => stderr };
}

// Two principals with their own upstream keys, over streamable HTTP with
// JWTs: each call carries its caller's key, an identical call by the
// second goes upstream with the second's key (cache_ttl is on), a repeat
// by the first is served from the first's cache, a principal without a key
// gets auth_error, and the upstream never sees a JWT.
test("TypeScript SDK client over HTTP: each principal calls with its own upstream key", async () => {
  const upstream = await startUpstream();
  const resource = "https://specgate.test/mcp";
  const issuer = await startIssuer(resource);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "specgate-ts-"));
  const config = path.join(dir, "specgate.yaml");
  fs.writeFileSync(config, [
    "cache_ttl: 1h",
    "disable_ratelimiter: true",
    "specs:",
    "  - name: petstore",
    `    location: ${JSON.stringify(path.join(root, "testdata/petstore-v3.yaml"))}`,
    `    base_url: ${JSON.stringify(upstream.url)}`,
    "    auth:",
    "      api_key:",
    "        by_principal:",
    '          - {subject: ada, org: acme, value: "${ADA_PETSTORE_KEY}"}',
    '          - {subject: bob, org: acme, value: "${BOB_PETSTORE_KEY}"}',
    "http:",
    "  auth:",
    `    resource: ${resource}`,
    `    jwt: {issuer: ${JSON.stringify(issuer.url)}}`,
    "",
  ].join("\n"));
  const keys = { ada: "ada-upstream-key-1f2e", bob: "bob-upstream-key-3d4c" };
  const served = serveHTTP(["--config", config, "--no-cache"], { ADA_PETSTORE_KEY: keys.ada, BOB_PETSTORE_KEY: keys.bob });
  const clients = [];
  try {
    const mcpURL = await served.url;

    // Without a token: a 401 that points to the metadata, which names the issuer.
    const bare = await fetch(mcpURL, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) });
    assert.equal(bare.status, 401);
    assert.equal(bare.headers.get("www-authenticate"), 'Bearer resource_metadata="https://specgate.test/.well-known/oauth-protected-resource/mcp"');
    const md = await (await fetch(new URL("/.well-known/oauth-protected-resource/mcp", mcpURL))).json();
    assert.equal(md.resource, resource);
    assert.deepEqual(md.authorization_servers, [issuer.url]);

    const tokens = { ada: await issuer.sign("ada", "acme"), bob: await issuer.sign("bob", "acme"), carol: await issuer.sign("carol", "acme") };
    const connect = async (who) => {
      const client = new Client({ name: `ts-e2e-${who}`, version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(mcpURL), { requestInit: { headers: { Authorization: `Bearer ${tokens[who]}` } } }));
      clients.push(client);
      return client;
    };
    const ada = await connect("ada");
    const bob = await connect("bob");
    const carol = await connect("carol");
    const getPet = { name: "invoke", arguments: { endpointId: "petstore.getPetById", parameters: { petId: 7 } } };

    const first = await ada.callTool(getPet);
    assert.ok(!first.isError, JSON.stringify(first));
    assert.equal(structured(first).cached, undefined);
    const second = await bob.callTool(getPet);
    assert.ok(!second.isError, JSON.stringify(second));
    assert.equal(structured(second).cached, undefined, "bob was served ada's cached answer");
    const repeat = await ada.callTool(getPet);
    assert.ok(!repeat.isError, JSON.stringify(repeat));
    assert.equal(structured(repeat).cached, true, "ada's repeat was not served from her cache");

    const refused = await carol.callTool(getPet);
    assert.equal(refused.isError, true);
    const err = structured(refused).error;
    assert.equal(err.code, "auth_error");
    assert.ok(JSON.stringify(err).includes("specs[petstore].auth.api_key.by_principal"), JSON.stringify(err));

    assert.equal(upstream.received.length, 2, JSON.stringify(upstream.received));
    assert.deepEqual(upstream.received.map((r) => r.headers.api_key), [keys.ada, keys.bob]);
    for (const r of upstream.received) {
      assert.equal(r.headers.authorization, undefined);
      const seen = JSON.stringify(r);
      for (const tok of Object.values(tokens)) assert.ok(!seen.includes(tok), "the upstream saw an MCP client's JWT");
      assert.doesNotMatch(seen, /eyJ[\w-]+\.[\w-]+\./, "the upstream saw a JWT");
    }
    for (const key of Object.values(keys)) assert.ok(!served.stderr().includes(key), "an upstream key reached the log");
  } finally {
    for (const c of clients) await c.close();
    served.child.kill();
    upstream.server.close();
    issuer.server.close();
  }
});

// run_script through the SDK: progress notifications after each call when
// the client sends a progress token (onprogress), and a run cancelled
// mid-script (AbortSignal): its queued calls leave the queue, nothing more
// is sent, and the server serves the next call. The upstream budget (3 per
// 50s, on_limit: wait) holds the cancelled run's later calls in the queue
// (each wait within the queue timeout, 4m, and the run's deadline, 5m,
// which bound a script's wait rather than call_timeout, so none is refused
// at once);
// scripts.per_principal is 1, so the next run_script also shows that the
// cancelled run gave its slot back.
test("TypeScript SDK client: run_script progress, and cancellation mid-script", async () => {
  const upstream = await startUpstream();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "specgate-ts-"));
  const config = path.join(dir, "specgate.yaml");
  fs.writeFileSync(config, [
    "rate_limit_interval: 1h",
    "specs:",
    "  - name: petstore-v3",
    `    location: ${JSON.stringify(path.join(root, "testdata/petstore-v3.yaml"))}`,
    `    base_url: ${JSON.stringify(upstream.url)}`,
    "upstreams:",
    `  - match: ${JSON.stringify(new URL(upstream.url).host)}`,
    "    requests_per_window: 3",
    "    window: 50s",
    "    on_limit: wait",
    "    queue_depth: 16",
    "    queue_timeout: 4m",
    "scripts:",
    "  timeout: 5m",
    "  per_principal: 1",
    "",
  ].join("\n"));
  const transport = new StdioClientTransport({ command: bin, args: ["serve", "--config", config, "--no-cache"], stderr: "ignore" });
  const client = new Client({ name: "ts-e2e-scripts", version: "1.0.0" });
  const id = "petstore-v3.getPetById";
  const queueDepth = async () => {
    const st = structured(await client.callTool({ name: "rate_limit_status", arguments: { endpointId: id } }));
    return st.upstreams.reduce((n, u) => n + u.queueDepth, 0);
  };
  try {
    await client.connect(transport);
    // Every message the server wrote, in the order the client read them.
    // The SDK runs a notification's handler a microtask after reading it
    // but a response's at once, so a last progress read in the same chunk
    // as its answer never reaches onprogress (typescript-sdk#2580, a race a
    // server cannot avoid): the order is checked here, on the wire.
    const wire = [];
    const onmessage = transport.onmessage;
    transport.onmessage = (message, extra) => { wire.push(message); onmessage?.(message, extra); };

    // Progress: one notification per call, rising, with a message, all
    // written before the answer.
    const progress = [];
    const ok = await client.callTool({ name: "run_script", arguments: { code:
      `let names = []; for (const petId of [1, 2]) names.push((await api.invoke("${id}", {parameters: {petId}})).body.id); return names;` } },
    undefined, { onprogress: (p) => progress.push(p) });
    assert.ok(!ok.isError, JSON.stringify(ok));
    assert.deepEqual(structured(ok).result, [1, 2]);
    const answered = wire.findLastIndex((m) => m.id !== undefined && m.result !== undefined);
    const sent = wire.slice(0, answered).filter((m) => m.method === "notifications/progress" && m.params.progressToken === wire[answered].id);
    assert.deepEqual(sent.map((m) => m.params.progress), [1, 2], JSON.stringify(wire.slice(0, answered + 1)));
    assert.match(sent[1].params.message, /2 calls done/);
    assert.ok(wire.slice(answered + 1).every((m) => m.method !== "notifications/progress"), "a progress came after the answer");
    // What onprogress heard: those, in order, maybe without the last ones
    // (both and the answer can come in one chunk from a fast upstream); the
    // cancellation below waits on onprogress for a call no answer follows.
    assert.deepEqual(progress.map((p) => p.progress), [1, 2].slice(0, progress.length), JSON.stringify(progress));
    assert.equal(upstream.received.length, 2);

    // Cancellation: the third request of the window goes out, the next four
    // wait in the queue (max_concurrent 4); then the client aborts.
    const ac = new AbortController();
    let firstDone;
    const oneCall = new Promise((resolve) => (firstDone = resolve));
    const run = client.callTool({ name: "run_script", arguments: { code:
      `await api.invoke("${id}", {parameters: {petId: 3}});
       return Promise.all([4, 5, 6, 7, 8, 9].map(petId => api.invoke("${id}", {parameters: {petId}})));` } },
    undefined, { signal: ac.signal, onprogress: (p) => { if (p.progress >= 1) firstDone(); } });
    let settled;
    run.then((r) => (settled = r), () => {}); // awaited below
    await oneCall;
    let depth = 0;
    for (let i = 0; i < 5000 && depth < 4; i++) depth = await queueDepth();
    assert.equal(depth, 4, `the script's next calls did not queue: ${JSON.stringify(settled)}`);
    ac.abort("the user stopped it");
    await assert.rejects(run, (e) => e.name === "AbortError" || /abort|stopped/i.test(String(e)));
    for (let i = 0; i < 5000 && depth > 0; i++) depth = await queueDepth();
    assert.equal(depth, 0, "the cancelled run's calls stayed in the queue");
    assert.deepEqual(upstream.received.map((r) => r.url), ["/api/v3/pet/1", "/api/v3/pet/2", "/api/v3/pet/3"]);

    // The server serves the next call, a run_script too: the cancelled run
    // gives its slot back once its worker is gone (a moment after the abort,
    // which the client cannot see: until then scripts.per_principal refuses).
    let next;
    for (let i = 0; i < 5000; i++) {
      next = await client.callTool({ name: "run_script", arguments: { code: `console.log("after"); return 6 * 7;` } });
      if (!next.isError || structured(next).error.limit?.key !== "scripts.per_principal") break;
    }
    assert.ok(!next.isError, JSON.stringify(next));
    assert.equal(structured(next).result, 42);
    const found = structured(await client.callTool({ name: "search", arguments: { query: "find a pet by its id" } }));
    assert.ok(found.endpoints.length > 0);
    assert.equal(upstream.received.length, 3, "a cancelled call went out after all");
    assert.equal(await queueDepth(), 0);
  } finally {
    await client.close();
    upstream.server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// approve_writes in the 2025 era (the initialize handshake) through the
// SDK over stdio: a write asks the user by elicitation/create, naming the
// method and path; accepted, it is sent; declined, it is not_approved and
// nothing is sent. A read is not asked about.
test("TypeScript SDK client: approve_writes by elicitation", async () => {
  const upstream = await startUpstream();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "specgate-ts-"));
  const config = path.join(dir, "specgate.yaml");
  fs.writeFileSync(config, [
    "disable_ratelimiter: true",
    "approve_writes: true",
    "specs:",
    "  - name: petstore-v3",
    `    location: ${JSON.stringify(path.join(root, "testdata/petstore-v3.yaml"))}`,
    `    base_url: ${JSON.stringify(upstream.url)}`,
    "",
  ].join("\n"));
  const transport = new StdioClientTransport({ command: bin, args: ["serve", "--config", config, "--no-cache"], stderr: "ignore" });
  const client = new Client({ name: "ts-e2e-approve", version: "1.0.0" }, { capabilities: { elicitation: {} } });
  const asked = [];
  let answer = "accept";
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params.message);
    return answer === "accept" ? { action: "accept", content: { approve: true } } : { action: answer };
  });
  const pet = { endpointId: "petstore-v3.addPet", requestBody: { name: "doggie", photoUrls: ["https://x.test/1.png"] } };
  try {
    await client.connect(transport);
    const read = await client.callTool({ name: "invoke", arguments: { endpointId: "petstore-v3.getPetById", parameters: { petId: 1 } } });
    assert.ok(!read.isError, JSON.stringify(read));
    assert.equal(asked.length, 0, "a read asked the user");

    const sent = await client.callTool({ name: "invoke", arguments: pet });
    assert.equal(asked.length, 1);
    assert.match(asked[0], /POST \/pet/);
    assert.match(asked[0], /doggie/);
    assert.equal(upstream.received.filter((r) => r.method === "POST").length, 1, JSON.stringify(sent));

    answer = "decline";
    const refused = await client.callTool({ name: "invoke", arguments: pet });
    assert.ok(refused.isError);
    assert.equal(structured(refused).error.code, "not_approved");
    assert.equal(asked.length, 2);
    assert.equal(upstream.received.filter((r) => r.method === "POST").length, 1, "a declined write was sent");
  } finally {
    await client.close();
    upstream.server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
