// A user's first hour, in the real OpenCode (npm opencode-ai@1.18.33) with
// the plugin started from `evolve-hud install-shim` and autostart on: a
// sidecar with no model on disk serves the HUD's facts and OpenCode is told
// the fix; a model pulled (from a local mock of the Hub) while OpenCode runs
// is taken up without a restart; a port left by `service uninstall` is
// forgotten and the one `install-shim --port` records is where everything
// looks; one still loading says so; one killed with SIGKILL is back within
// 5 s. (What the user is told, case by case: notices.test.ts.)

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { spawn, spawnSync } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createInterface } from "node:readline";
import { join } from "node:path";
import { deadPort } from "./helpers.ts";
import * as harness from "./opencode.ts";
import { base, hasHud, pluginSaid, project, recordToasts, refreshInstalled, serving, sidecarBin, sidecarConfigHome, testModel, thinking } from "./opencode.ts";

after(() => rmSync(base, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/** `evolve-hud ARGS` in the environment OpenCode runs in: its exit code and what it printed. */
function evolveHud(prepared: harness.Prepared, args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(sidecarBin, args, { env: { ...prepared.env, ...env }, encoding: "utf8", timeout: 60_000 });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

/** `evolve-hud ARGS` run without blocking this process (which may serve what it asks for). */
function evolveHudAsync(prepared: harness.Prepared, args: string[], timeoutMs = 120_000): Promise<{ code: number | null; out: string }> {
  return new Promise((ok) => {
    const child = spawn(sidecarBin, args, { env: prepared.env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (out += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      ok({ code, out });
    });
  });
}

const TEST_MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/**
 * A local mock of the Hugging Face Hub (`HF_ENDPOINT`) serving the test
 * model as `test-org/SmolLM2-135M-Instruct-GGUF`, ranges and all, and a
 * registry that names it `smollm2-135m`.
 */
async function mockHub() {
  const data = readFileSync(testModel);
  const repo = "test-org/SmolLM2-135M-Instruct-GGUF";
  const file = "SmolLM2-135M-Instruct.Q4_1.gguf";
  const commit = "0123456789abcdef0123456789abcdef01234567";
  const server = createServer((req, res) => {
    if (!req.url?.startsWith(`/${repo}/resolve/`) || !req.url.endsWith(`/${file}`)) {
      res.writeHead(404).end("Entry not found");
      return;
    }
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
    const start = range ? Number(range[1]) : 0;
    const end = range && range[2] ? Math.min(Number(range[2]), data.length - 1) : data.length - 1;
    const body = data.subarray(start, end + 1);
    res.writeHead(range ? 206 : 200, {
      "x-repo-commit": commit,
      etag: `"${TEST_MODEL_SHA256}"`,
      "content-range": `bytes ${start}-${end}/${data.length}`,
      "content-length": String(body.length),
    });
    res.end(req.method === "HEAD" ? undefined : body);
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const registry = join(base, "hub-models.toml");
  writeFileSync(
    registry,
    `[[model]]\nname = "smollm2-135m"\nrepo = "${repo}"\nfile = "${file}"\nsha256 = "${TEST_MODEL_SHA256}"\nsize = ${data.length}\n` +
      `license = "apache-2.0"\nctx = 2048\nnote = "the test model"\n`,
  );
  return {
    /** What `pull` and the sidecar need to find the model: the Hub, its caches, the registry. */
    env: {
      HF_ENDPOINT: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      HF_HOME: join(base, "hf"),
      EVOLVE_HUD_CACHE: join(base, "models"),
      EVOLVE_HUD_REGISTRY: registry,
    },
    stop: () => new Promise<void>((ok) => (server.closeAllConnections(), server.close(() => ok()))),
  };
}


function stopper(prepared: harness.Prepared, port: number) {
  return () => spawnSync(sidecarBin, ["stop", "--port", String(port)], { env: prepared.env, encoding: "utf8" });
}

test("autostart with no model on disk: the sidecar serves the HUD's facts, and OpenCode is told what is missing and the fix", async (t) => {
  const port = await deadPort();
  const prepared = await harness.prepare({ installShim: true, scenario: thinking(3, 1500), env: { EVOLVE_HUD_PORT: String(port), EVOLVE_HUD_AUTOSTART: "on" } });
  const stop = stopper(prepared, port);
  t.after(async () => {
    stop();
    await prepared.model.stop();
  });
  // What install-shim records with no --model: the binary, the registry's default model.
  const config = join(prepared.env.XDG_CONFIG_HOME, "evolve-hud");
  mkdirSync(config, { recursive: true });
  writeFileSync(join(config, "launch.json"), JSON.stringify({ binary: sidecarBin }));
  const run = await harness.opencodeRun(prepared);
  assert.equal(run.code, 0, run.output);
  const said = pluginSaid(prepared).join("\n");
  t.diagnostic(said);
  assert.match(said, /started `.* serve --port \d+ --facts-without-model`/, said);
  assert.match(said, /the sidecar serves the HUD's facts without a model: .*not on disk.*; fix: \S*evolve-hud pull \S+/, said);
  assert.doesNotMatch(said, /exited/, said);
  const main = prepared.model.requests.filter((r) => r.kind === "main");
  assert.ok(main.slice(2).every(hasHud), `the HUD's facts from the third request on: ${main.map(hasHud)}`);
});

test("a sidecar still loading: the plugin says it is loading, and the HUD's facts come meanwhile", async (t) => {
  // The hold needs a sidecar built with the test feature (scripts/test.sh builds it so).
  const probe = spawn(sidecarBin, ["serve", "--port", "0", "--model", testModel], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, RUST_LOG: "info", EVOLVE_HUD_FAULT_LOAD_MS: "3000", XDG_CONFIG_HOME: sidecarConfigHome },
  });
  const url = await new Promise<string>((ok) => {
    const timer = setTimeout(() => ok(""), 30_000);
    createInterface({ input: probe.stderr! }).on("line", (line) => {
      const m = line.match(/listening on (http:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        ok(m[1]);
      }
    });
  });
  const loading: any = url ? await fetch(`${url}/health`).then((r) => r.json()).catch(() => ({})) : {};
  probe.kill("SIGKILL");
  assert.equal(
    loading.status,
    "loading",
    `${sidecarBin} does not hold its load: build it with \`cargo build --release --features fault-injection\` (scripts/test.sh does)`,
  );
  const port = await deadPort();
  const prepared = await harness.prepare({
    installShim: true,
    scenario: thinking(4, 1500),
    // The test build holds the load back this long (the fault-injection feature).
    env: { EVOLVE_HUD_PORT: String(port), EVOLVE_HUD_AUTOSTART: "on", EVOLVE_HUD_FAULT_LOAD_MS: "20000" },
  });
  const stop = stopper(prepared, port);
  t.after(async () => {
    stop();
    await prepared.model.stop();
  });
  const run = await harness.opencodeRun(prepared);
  assert.equal(run.code, 0, run.output);
  const said = pluginSaid(prepared).join("\n");
  assert.match(said, /the sidecar is loading its model/, said);
  const status = spawnSync(sidecarBin, ["status", "--url", `http://127.0.0.1:${port}`], { env: prepared.env, encoding: "utf8" });
  assert.match(status.stdout + status.stderr, /loading/, status.stdout + status.stderr);
  const main = prepared.model.requests.filter((r) => r.kind === "main");
  assert.ok(main.slice(2).every(hasHud), `the HUD from the third request on: ${main.map(hasHud)}`);
});

test("an autostarted sidecar killed with SIGKILL: the HUD is back within 5 s of the kill", async (t) => {
  const port = await deadPort();
  const prepared = await harness.prepare({ installShim: true, scenario: thinking(14, 1000), env: { EVOLVE_HUD_PORT: String(port), EVOLVE_HUD_AUTOSTART: "on" } });
  const stop = stopper(prepared, port);
  t.after(async () => {
    stop();
    await prepared.model.stop();
  });
  let killedAt = 0;
  const killer = (async () => {
    // Once the HUD has reached the agent twice, the sidecar is killed.
    for (let i = 0; i < 600 && prepared.model.requests.filter((r) => r.kind === "main" && hasHud(r)).length < 2; i++) {
      await new Promise((ok) => setTimeout(ok, 50));
    }
    const pids = serving(port);
    assert.equal(pids.length, 1, `one sidecar: ${pids}`);
    process.kill(Number(pids[0]), "SIGKILL");
    killedAt = Date.now();
  })();
  const run = await harness.opencodeRun(prepared);
  await killer;
  assert.equal(run.code, 0, run.output);
  assert.ok(killedAt > 0, "the sidecar was killed");
  const main = prepared.model.requests.filter((r) => r.kind === "main");
  const after = main.filter((r) => r.at >= killedAt + 5000);
  assert.ok(after.length >= 2, `requests 5 s after the kill: ${after.length}`);
  const marks = main.map((r) => `${((r.at - killedAt) / 1000).toFixed(1)}s:${hasHud(r) ? "✓" : "✗"}`).join(" ");
  t.diagnostic(`main requests, seconds from the kill: ${marks}`);
  assert.ok(after.every(hasHud), `every request from 5 s after the kill carries the HUD: ${marks}\n${pluginSaid(prepared).join("\n")}`);
  assert.equal(serving(port).length, 1, "one sidecar again");
});

test("real OpenCode: no model on disk, then `evolve-hud pull` while OpenCode runs: the HUD's facts from the start, the fix told once, and the model taken up without a restart of either", async (t) => {
  const port = await deadPort();
  const hub = await mockHub();
  t.after(() => hub.stop());
  let pulled = { code: null as number | null, out: "" };
  let pulledAt = 0;
  let pid = "";
  const prepared = await harness.prepare({
    installShim: true,
    scenario: thinking(9, 1500, async (step) => {
      if (step !== 2) return;
      // The sidecar the plugin started serves facts alone; the user pulls the model it names.
      pid = serving(port).join(",");
      pulled = await evolveHudAsync(prepared, ["pull", "smollm2-135m"]);
      pulledAt = Date.now();
    }),
    env: { EVOLVE_HUD_PORT: String(port), EVOLVE_HUD_AUTOSTART: "on", ...hub.env },
  });
  t.after(async () => {
    evolveHud(prepared, ["stop", "--port", String(port)]);
    await prepared.model.stop();
  });
  // The plugin starts the registry's model by name; it is not on disk yet.
  const shim = evolveHud(prepared, ["install-shim", "--project", project, "--model", "smollm2-135m"]);
  assert.equal(shim.code, 0, shim.out);
  assert.match(shim.out, /smollm2-135m is not on disk yet: `evolve-hud pull smollm2-135m`/, shim.out);
  refreshInstalled(join(project, ".opencode", "plugins"));
  const server = await harness.opencodeServe(prepared);
  const recorder = recordToasts(server);
  t.after(() => {
    recorder.stop();
    server.stop();
  });
  await sleep(300);
  await harness.promptServer(server);
  await sleep(500);
  const toasts = recorder.toasts;
  const said = pluginSaid(prepared).join("\n");
  const main = prepared.model.requests.filter((r) => r.kind === "main");
  const marks = main.map((r) => `${((r.at - pulledAt) / 1000).toFixed(1)}s:${hasHud(r) ? "✓" : "✗"}`).join(" ");
  t.diagnostic(`pull: ${pulled.out.trim().split("\n").at(-1)}`);
  t.diagnostic(`toasts: ${JSON.stringify(toasts.map((x) => `${x.variant}: ${x.message}`), null, 1)}`);
  t.diagnostic(`main requests, seconds from the pull: ${marks}`);
  assert.equal(pulled.code, 0, pulled.out);
  assert.ok(main.slice(2).every(hasHud), `the HUD's facts from the third request on, through the pull: ${marks}\n${said}`);
  const missing = toasts.filter((x) => x.message.startsWith("The HUD runs on facts alone"));
  assert.equal(missing.length, 1, JSON.stringify(toasts));
  assert.match(missing[0].message, /`\S*evolve-hud pull smollm2-135m`; the sidecar takes the model up by itself once it is on disk\./);
  const came = toasts.filter((x) => x.message.startsWith("The model is on disk now"));
  assert.equal(came.length, 1, `the model's arrival told once: ${JSON.stringify(toasts)}\n${said}`);
  assert.ok(came[0].at > pulledAt && came[0].at - pulledAt < 15_000, `told ${came[0].at - pulledAt} ms after the pull`);
  assert.ok(!toasts.some((x) => /exited|failed|again:/.test(x.message)), JSON.stringify(toasts));
  // Taken up in place: the same process, now serving the model.
  assert.equal(serving(port).join(","), pid, "the same sidecar process");
  const status = JSON.parse(evolveHud(prepared, ["status", "--json"]).out);
  assert.deepEqual([status.health?.engine, status.health?.status, status.health?.missing], ["local", "ready", undefined], JSON.stringify(status.health));
});

test("real OpenCode: a port left by `service install` is forgotten at `service uninstall`, and the port `install-shim --port` records is where the plugin, doctor and status all look", async (t) => {
  const left = await deadPort();
  const port = await deadPort();
  // No EVOLVE_HUD_PORT: the launch record alone says where the sidecar is.
  const prepared = await harness.prepare({ installShim: true, scenario: thinking(4, 1000), env: { EVOLVE_HUD_AUTOSTART: "on" } });
  t.after(async () => {
    for (const p of [left, port]) evolveHud(prepared, ["stop", "--port", String(p)]);
    await prepared.model.stop();
  });
  const installed = evolveHud(prepared, ["service", "install", "--port", String(left)]);
  assert.equal(installed.code, 0, installed.out);
  assert.match(installed.out, new RegExp(`the plugin talks to it on port ${left}`), installed.out);
  const uninstalled = evolveHud(prepared, ["service", "uninstall"]);
  assert.match(uninstalled.out, new RegExp(`no longer look at port ${left}: they use 8377 again`), uninstalled.out);
  const shim = evolveHud(prepared, ["install-shim", "--project", project, "--model", testModel, "--port", String(port)]);
  assert.equal(shim.code, 0, shim.out);
  assert.match(shim.out, new RegExp(`It talks to http://127\\.0\\.0\\.1:${port} and`), shim.out);
  assert.match(shim.out, new RegExp(`serve --port ${port} --model`), shim.out);
  refreshInstalled(join(project, ".opencode", "plugins"));
  // Before the first OpenCode start: ready, the plugin starts the sidecar there.
  const before = spawnSync(sidecarBin, ["doctor", "--project", project], { env: prepared.env, encoding: "utf8", timeout: 60_000 });
  t.diagnostic(`doctor before the first start:\n${before.stdout}${before.stderr}`);
  assert.equal(before.status, 0, before.stdout + before.stderr);
  assert.match(before.stdout, new RegExp(`127\\.0\\.0\\.1:${port}`), before.stdout);
  const run = await harness.opencodeRun(prepared);
  assert.equal(run.code, 0, run.output);
  const main = prepared.model.requests.filter((r) => r.kind === "main");
  assert.ok(main.slice(2).every(hasHud), `the HUD from the third request on: ${main.map(hasHud)}\n${pluginSaid(prepared).join("\n")}`);
  assert.equal(serving(port).length, 1, "the plugin started the sidecar on the recorded port");
  assert.deepEqual(serving(left), [], "and none on the forgotten one");
  const status = evolveHud(prepared, ["status"]);
  t.diagnostic(`status:\n${status.out}`);
  assert.equal(status.code, 0, status.out);
  assert.match(status.out, new RegExp(`evolve-hud at http://127\\.0\\.0\\.1:${port}`), status.out);
  assert.equal(status.out.split("\n").filter((l) => l.startsWith("ses_")).length, 1, `the live session: ${status.out}`);
  const after = spawnSync(sidecarBin, ["doctor", "--project", project], { env: prepared.env, encoding: "utf8", timeout: 60_000 });
  t.diagnostic(`doctor with the sidecar up:\n${after.stdout}${after.stderr}`);
  assert.equal(after.status, 0, after.stdout + after.stderr);
  assert.match(after.stdout, new RegExp(`127\\.0\\.0\\.1:${port}`), after.stdout);
});
