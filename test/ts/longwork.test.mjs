// Long work through the official TypeScript MCP SDK client with its default
// options: a 60 s timeout per request and no progress token. A run_script of
// 100 lookups paced at 10 requests per 10 s takes about 90 s; it must come
// back whole through run_script's early answer and script_result, in at most
// 6 tool calls, none over 30 s, with exactly 100 upstream requests and no 429.
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

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const bin = process.env.SPECGATE_BIN || path.join(root, "bin/specgate");

// startQuotaUpstream answers GET /api/v3/pet/{id} and enforces limit
// requests per window ms with real 429s, counting what it saw.
function startQuotaUpstream(limit, windowMs) {
  const seen = { requests: 0, limited: 0, times: [] };
  const server = http.createServer((req, res) => {
    const now = Date.now();
    seen.requests++;
    const recent = seen.times.filter((t) => now - t < windowMs);
    if (recent.length >= limit) {
      seen.limited++;
      res.writeHead(429, { "content-type": "application/json", "retry-after": "10" });
      res.end(JSON.stringify({ message: "slow down" }));
      return;
    }
    seen.times.push(now);
    const id = Number(req.url.split("/").pop());
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ id, name: "pet " + id, status: "available" }));
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => resolve({ server, seen, port: server.address().port }));
  });
}

function configFor(port) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "specgate-long-"));
  const file = path.join(dir, "config.yaml");
  fs.writeFileSync(file, `specs:
  - name: pets
    location: ${path.join(root, "testdata/petstore-v3.yaml")}
    base_url: http://127.0.0.1:${port}/api/v3
upstreams:
  - match: 127.0.0.1:${port}
    requests_per_window: 10
    window: 10s
`);
  return file;
}

function structured(result) {
  return result.structuredContent || JSON.parse(result.content[0].text);
}

const lookups = (n) => `
const names = [];
for (let i = 1; i <= ${n}; i++) {
  const r = await api.invoke("pets.getPetById", {parameters: {petId: i}});
  names.push(r.body.name);
  api.progress(i, ${n}, "pet " + i);
}
return names;`;

async function connect(port) {
  const transport = new StdioClientTransport({
    command: bin, args: ["serve", "--config", configFor(port), "--no-cache"], stderr: "ignore",
  });
  const client = new Client({ name: "ts-longwork", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

test("TypeScript SDK, default options: 100 lookups at 10 per 10 s come back whole through script_result", async () => {
  const up = await startQuotaUpstream(10, 10_000);
  const client = await connect(up.port);
  try {
    const calls = [];
    const timed = async (name, args) => {
      const start = Date.now();
      const res = await client.callTool({ name, arguments: args }); // the SDK's default options
      const out = structured(res);
      calls.push({ name, ms: Date.now() - start, at: Date.now(), out, isError: res.isError });
      return { res, out };
    };
    let { res, out } = await timed("run_script", { code: lookups(100) });
    assert.equal(out.status, "running", `run_script answered ${JSON.stringify(out)}`);
    const runId = out.runId;
    while (out.status === "running") {
      assert.ok(!res.isError, JSON.stringify(out));
      ({ res, out } = await timed("script_result", { runId }));
    }
    const end = Date.now();
    assert.ok(!res.isError, JSON.stringify(out));
    assert.equal(out.status, "done");
    assert.equal(out.result.length, 100);
    assert.equal(out.result[99], "pet 100");
    assert.ok(calls.length <= 6, `${calls.length} tool calls: ${calls.map((c) => c.ms).join(", ")} ms`);
    for (const c of calls) assert.ok(c.ms <= 30_000, `a ${c.name} call took ${c.ms} ms`);
    assert.equal(up.seen.requests, 100, "upstream requests");
    assert.equal(up.seen.limited, 0, "upstream 429s");
    // Each running answer's ETA is within half of the time that was left.
    for (const c of calls.filter((c) => c.out.status === "running")) {
      const eta = c.out.progress.etaSeconds;
      const left = (end - c.at) / 1000;
      assert.equal(typeof eta, "number", JSON.stringify(c.out));
      assert.ok(Math.abs(eta - left) <= left / 2 + 1, `ETA ${eta}s with ${left.toFixed(1)}s left`);
    }
    console.log(`# long work: ${calls.length} tool calls, ${calls.map((c) => c.ms).join("/")} ms; ETAs ` +
      calls.filter((c) => c.out.progress).map((c) => `${c.out.progress.etaSeconds}s@${((end - c.at) / 1000).toFixed(1)}s`).join(" "));
  } finally {
    await client.close();
    up.server.close();
  }
});

test("TypeScript SDK: cancel stops a run's calls", async () => {
  const up = await startQuotaUpstream(10, 10_000);
  const client = await connect(up.port);
  try {
    let res = await client.callTool({ name: "run_script", arguments: { code: lookups(40) } });
    let out = structured(res);
    assert.equal(out.status, "running");
    res = await client.callTool({ name: "script_result", arguments: { runId: out.runId, cancel: true } });
    out = structured(res);
    assert.equal(out.status, "cancelled", JSON.stringify(out));
    const sent = up.seen.requests;
    assert.ok(sent < 40, `${sent} requests before the cancel`);
    // Every call that went out is counted (a call cancelled in the queue
    // counts as cancelled and sent nothing).
    assert.equal(out.calls.byStatus["200"], sent, JSON.stringify(out));
    // Every later read says the same, and nothing more goes out.
    res = await client.callTool({ name: "script_result", arguments: { runId: out.runId, waitSeconds: 0 } });
    assert.equal(structured(res).status, "cancelled");
    const status = structured(await client.callTool({ name: "rate_limit_status", arguments: {} }));
    assert.ok(!status.runs, `a cancelled run is still listed: ${JSON.stringify(status.runs)}`);
    assert.equal(up.seen.requests, sent);
  } finally {
    await client.close();
    up.server.close();
  }
});

test("TypeScript SDK, experimental tasks client: the same run as an MCP task", async () => {
  const up = await startQuotaUpstream(10, 10_000);
  const client = await connect(up.port);
  try {
    const tools = await client.listTools();
    assert.equal(tools.tools.find((t) => t.name === "run_script").execution?.taskSupport, "optional");
    let taskId;
    const statuses = [];
    let result;
    const stream = client.experimental.tasks.callToolStream({ name: "run_script", arguments: { code: lookups(25) } }, undefined, { task: {} });
    for await (const msg of stream) {
      if (msg.type === "taskCreated") taskId = msg.task.taskId;
      if (msg.type === "taskStatus") statuses.push(msg.task);
      if (msg.type === "result") result = msg.result;
      if (msg.type === "error") throw msg.error;
    }
    // The task id names the run.
    assert.match(taskId, /^run-[0-9a-f]+$/);
    assert.ok(statuses.some((s) => s.status === "working" && / of 25 done, \d+ calls done: pet \d+/.test(s.statusMessage)),
      JSON.stringify(statuses.map((s) => s.statusMessage)));
    const out = structured(result);
    assert.equal(out.status, "done", JSON.stringify(out));
    assert.equal(out.result.length, 25);
    assert.equal(out.runId, taskId);
    // script_result reads the very same run and answer.
    const again = await client.callTool({ name: "script_result", arguments: { runId: taskId, waitSeconds: 0 } });
    assert.equal(again.content[0].text, result.content[0].text);
    assert.equal(up.seen.requests, 25, "upstream requests");
    assert.equal(up.seen.limited, 0, "upstream 429s");
    console.log(`# task: ${statuses.length} tasks/get polls, last "${statuses.at(-2)?.statusMessage}"`);
  } finally {
    await client.close();
    up.server.close();
  }
});
