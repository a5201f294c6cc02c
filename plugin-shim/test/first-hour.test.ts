// A user's first hour, in the real OpenCode (npm opencode-ai@1.18.33) with
// the plugin started from `evolve-hud install-shim` and autostart on: a
// sidecar with no model on disk serves the HUD's facts and OpenCode is told
// the fix, one still loading says so, and one killed with SIGKILL is back
// within 5 s. (What the user is told, case by case: notices.test.ts.)

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { spawn, spawnSync } from "node:child_process";
import { createInterface } from "node:readline";
import { join } from "node:path";
import type { Scenario } from "./fake-model.ts";
import { deadPort } from "./helpers.ts";
import * as harness from "./opencode.ts";
import { base, pluginSaid, sidecarBin, sidecarConfigHome, testModel } from "./opencode.ts";

after(() => rmSync(base, { recursive: true, force: true }));

/** `steps` bash calls, the main model thinking `thinkMs` before each answer. */
function thinking(steps: number, thinkMs: number): Scenario {
  return {
    script: Array.from({ length: steps }, (_, i) => ({ tool: "bash", args: { command: `echo step ${i}`, description: "run" } })),
    beforeMain: () => new Promise((ok) => setTimeout(ok, thinkMs)),
  };
}

const hasHud = (request: any) => JSON.stringify(request.body.messages).includes("<evolve-hud");

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
  assert.match(said, /the sidecar serves the HUD's facts without a model: .*not on disk.*; fix: evolve-hud pull \S+/, said);
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
  const serving = () => spawnSync("pgrep", ["-f", `evolve-hud serve --port ${port}`], { encoding: "utf8" }).stdout.split("\n").filter(Boolean);
  let killedAt = 0;
  const killer = (async () => {
    // Once the HUD has reached the agent twice, the sidecar is killed.
    for (let i = 0; i < 600 && prepared.model.requests.filter((r) => r.kind === "main" && hasHud(r)).length < 2; i++) {
      await new Promise((ok) => setTimeout(ok, 50));
    }
    const pids = serving();
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
  assert.equal(serving().length, 1, "one sidecar again");
});
