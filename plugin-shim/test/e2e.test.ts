// End to end inside the real OpenCode (npm opencode-ai@1.18.33), offline: a
// scripted fake main model, the real evolve-hud sidecar with the real test
// model, and this plugin loaded from opencode.json. The requests OpenCode sends
// to the main model are compared with a run without the plugin.
//
// Also: a run with the sidecar stopped, `install-shim` into a fresh project,
// an auto-compaction, the heartbeat under `opencode serve`, and a sidecar
// SIGKILLed mid-sync and restarted on the same port.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { EvolveHudPlugin } from "../evolve-hud.ts";
import { isHud } from "../evolve-hud/hud.ts";
import { FALLBACK_CLIP, parseClipRule } from "../evolve-hud/slim.ts";
import type { Scenario, ToolStep } from "./fake-model.ts";
import { AUTH, clone, deadPort, latestSession, TEST_SECRET, timeSteps, Tmux, transforms } from "./helpers.ts";
import * as harness from "./opencode.ts";
import { base, isHudMessage, opencode, project, sidecarBin, sidecarConfigHome, startSidecar, testModel, textOf, withoutHud, withoutRecoverTool } from "./opencode.ts";
import type { RunOptions, RunResult, Sidecar } from "./opencode.ts";

const { createShim } = EvolveHudPlugin.internals;

const script: ToolStep[] = [
  { tool: "bash", args: { command: "echo hello", description: "Say hello" } },
  { tool: "write", args: { filePath: join(project, "notes.txt"), content: "first line\nsecond line\n" } },
  { tool: "read", args: { filePath: join(project, "notes.txt") } },
  { tool: "edit", args: { filePath: join(project, "notes.txt"), oldString: "first line", newString: "1st line" } },
  { tool: "bash", args: { command: "cat missing.txt", description: "Show a missing file" } },
];

const runOpencode = (options: RunOptions = {}) => harness.runOpencode({ scenario: { script }, ...options });
const prepare = (options: RunOptions) => harness.prepare({ scenario: { script }, ...options });

// --- The runs ----------------------------------------------------------------------

let baseline: RunResult;
let sidecar: Sidecar;

before(async () => {
  for (const [what, path] of [
    ["opencode (npm install in plugin-shim/)", opencode],
    ["the evolve-hud binary (cargo build --release)", sidecarBin],
    ["the test model (scripts/fetch-test-model.sh)", testModel],
  ]) {
    assert.ok(existsSync(path), `${what} missing at ${path}`);
  }
  sidecar = await startSidecar();
  baseline = await runOpencode();
  assert.equal(baseline.code, 0, baseline.output);
  assert.equal(baseline.main.length, script.length + 1, "one main request per tool call, plus the final one");
}, { timeout: 300_000 });

after(async () => {
  await sidecar?.stop();
  rmSync(base, { recursive: true, force: true });
}, { timeout: 60_000 });

test("the real sidecar publishes its clipping rule in a shape the plugin takes", async () => {
  const health = await (await fetch(sidecar.url + "/health", { headers: AUTH })).json();
  const rule = parseClipRule(health.hud_clip);
  assert.ok(rule, JSON.stringify(health.hud_clip));
  assert.ok(rule.head > 0 && rule.tail > 0 && rule.middle.words.includes("error"), JSON.stringify(rule));
  // The rule the plugin clips by before it has proven a sidecar is this
  // one: its sizes and failure words are the sidecar's constants.
  assert.deepEqual(FALLBACK_CLIP, rule);
});

test("with the shim: one HUD, last, reflecting the tool calls; otherwise identical requests", async (t) => {
  const run = await runOpencode({ plugin: { url: sidecar.url } });
  assert.equal(run.code, 0, run.output);
  assert.equal(run.main.length, baseline.main.length, run.output);
  for (const [i, body] of run.main.entries()) {
    const huds = body.messages.filter(isHudMessage);
    if (i >= 1) assert.equal(huds.length, 1, `request ${i + 1} has ${huds.length} HUDs`);
    if (huds.length === 1) assert.ok(isHudMessage(body.messages.at(-1)), `request ${i + 1}: the HUD is last`);
    assert.deepEqual(withoutHud(body), baseline.main[i], `request ${i + 1} differs beyond the HUD`);
  }
  const last = textOf(run.main.at(-1).messages.at(-1));
  t.diagnostic(`HUD in the final request:\n${last}`);
  assert.match(last, /^<evolve-hud>\n/);
  // What the agent has in view is not repeated: the request, and the reads and edits that succeeded.
  assert.doesNotMatch(last, /Do the task/);
  assert.doesNotMatch(last, /✓ edit notes\.txt/);
  assert.match(last, /^Tool calls: \d+; listed: the last \d+ runs and open failures:$/m);
  assert.match(last, /✓ bash `echo hello`/);
  assert.match(last, /✗ bash `cat missing\.txt` → exit 1/);
  assert.match(last, /No such file or directory/);
  // One sync per step: the plugin is loaded once.
  const metrics = await (await fetch(sidecar.url + "/metrics", { headers: AUTH })).text();
  const syncs = metrics
    .split("\n")
    .filter((l) => l.startsWith("evolve_hud_http_requests_total{") && l.includes('path="/v1/hud/sync"'))
    .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
  assert.equal(syncs, run.main.length, metrics);
  // The sidecar saw the forwarded tool results too.
  const list = await (await fetch(sidecar.url + "/v1/hud", { headers: AUTH })).json();
  assert.ok(list.sessions.some((s: any) => s.tool_calls === script.length), JSON.stringify(list));
  t.diagnostic(`opencode run: ${run.seconds.toFixed(1)} s with the shim, ${baseline.seconds.toFixed(1)} s without`);
});

test("evolve-hud watch in a terminal shows the run's HUD live, as the agent gets it", async (t) => {
  // `watch` finds the secret the way the sidecar does: in its config folder.
  const tmux = Tmux.start(`env XDG_CONFIG_HOME=${sidecarConfigHome} ${sidecarBin} watch --url ${sidecar.url}`, 200, 40);
  try {
    await tmux.waitFor("the watch screen", 10_000, (s) => s.includes("● model ready"));
    // Which HUD versions of the run's session the screen showed while it ran.
    const seen = new Set<string>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const version = tmux.screen().match(/HUD ses_\S+ · version (\d+) ·/);
        if (version) seen.add(version[1]);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const run = await runOpencode({ plugin: { url: sidecar.url } });
    assert.equal(run.code, 0, run.output);
    const session = (await latestSession(sidecar.url))!;
    // The HUD pane shows the session's HUD line for line: the one the agent
    // got last, or a newer one if the local model's note came in since.
    const deadline = performance.now() + 5_000;
    let screen: string;
    for (;;) {
      const view = await (await fetch(sidecar.url + "/v1/hud/" + session, { headers: AUTH })).json();
      screen = tmux.screen();
      const lines = view.hud.split("\n").filter((l: string) => l.length <= 110);
      if (screen.includes(`· version ${view.version} ·`) && lines.every((l: string) => screen.includes(l))) break;
      assert.ok(performance.now() < deadline, `the screen does not show version ${view.version}:\n${view.hud}\n---\n${screen}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    watching = false;
    await watcher;
    t.diagnostic(`versions seen while the run went on: ${[...seen].join(", ")}\n${screen}`);
    assert.ok(seen.size >= 3, `the screen followed the run step by step: ${[...seen].join(", ")}`);
    assert.match(screen, /5 tool calls \(1 failed\)/);
    tmux.keys("q");
  } finally {
    tmux.stop();
  }
});

test("with the sidecar stopped the run still succeeds, unchanged", async (t) => {
  const run = await runOpencode({ plugin: { url: `http://127.0.0.1:${await deadPort()}` } });
  assert.equal(run.code, 0, run.output);
  assert.deepEqual(run.main.map(withoutRecoverTool), baseline.main);
  t.diagnostic(`opencode run with the sidecar down: ${run.seconds.toFixed(1)} s (${baseline.seconds.toFixed(1)} s without the shim)`);
});

test("installed with `evolve-hud install-shim` in a fresh project and pointed at the sidecar by env", async () => {
  const run = await runOpencode({
    installShim: true,
    env: { EVOLVE_HUD_URL: sidecar.url, EVOLVE_HUD_TIMEOUT_MS: "2000" },
  });
  assert.equal(run.code, 0, run.output);
  const last = run.main.at(-1);
  assert.ok(isHudMessage(last.messages.at(-1)), "the HUD is last");
  assert.equal(last.messages.filter(isHudMessage).length, 1);
  assert.match(textOf(last.messages.at(-1)), /✗ bash `cat missing\.txt` → exit 1/);
  assert.deepEqual(withoutHud(last), baseline.main.at(-1));
});

test("with no sidecar running, the installed plugin starts one: the HUD comes within two steps, and two OpenCode processes at once share one sidecar", async (t) => {
  const port = await deadPort();
  // A main model that thinks 4 s a step, as real ones do (or longer): the
  // HUD is retried 1 s after a refused connection, and the sidecar loads.
  const thinking: Scenario = { script: Array.from({ length: 6 }, (_, i) => ({ tool: "bash", args: { command: `echo step ${i}`, description: "run" } })), beforeMain: () => new Promise((ok) => setTimeout(ok, 4000)) };
  const prepared = await prepare({ installShim: true, scenario: thinking, env: { EVOLVE_HUD_PORT: String(port), EVOLVE_HUD_AUTOSTART: "on" } });
  const stop = () => spawnSync(sidecarBin, ["stop", "--port", String(port)], { env: prepared.env, encoding: "utf8" });
  t.after(async () => {
    stop();
    await prepared.model.stop();
  });
  // Two OpenCode processes writing one SQLite database at once can fail
  // with "database is locked" (OpenCode's own race, not the plugin's): each
  // gets its own data folder. They share what finds the sidecar: the config
  // folder (launch record, secret), the state folder (lock, log), the port.
  const other = { ...prepared, env: { ...prepared.env, XDG_DATA_HOME: join(base, "second-data") } };
  mkdirSync(other.env.XDG_DATA_HOME, { recursive: true });
  for (const { env } of [prepared, other]) spawnSync(opencode, ["session", "list"], { cwd: project, env, timeout: 60_000 });
  const [first, second] = await Promise.all([harness.opencodeRun(prepared), harness.opencodeRun(other)]);
  assert.equal(first.code, 0, first.output);
  assert.equal(second.code, 0, second.output);
  const logPath = join(prepared.env.XDG_STATE_HOME, "evolve-hud", "serve.log");
  assert.equal(harness.serving(port).length, 1, `exactly one sidecar serves the port\n${existsSync(logPath) ? readFileSync(logPath, "utf8") : "no log"}\n${first.output.slice(-3000)}`);
  const main = prepared.model.requests.filter((r) => r.kind === "main");
  const withHud = main.map((r) => r.body.messages.some((m: any) => JSON.stringify(m).includes("<evolve-hud")));
  // A session's first request carries no tool result yet; every later one
  // (from each session's second request on) carries the HUD.
  const later = main.map((r) => JSON.stringify(r.body.messages).includes("call_step_"));
  t.diagnostic(`main requests (· first of a session, ✓ HUD, ✗ none): ${main.map((_, i) => (!later[i] ? "·" : withHud[i] ? "✓" : "✗")).join("")}`);
  const said = [prepared, other]
    .map(({ env }) => join(env.XDG_DATA_HOME, "opencode", "log"))
    .flatMap((dir) => readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), "utf8").split("\n")))
    .filter((l) => l.includes("evolve-hud:"));
  assert.ok(main.every((_, i) => !later[i] || withHud[i]), `${withHud.join(",")}\n${said.join("\n")}\n${main.map((r) => new Date(r.at).toISOString()).join(" ")}`);
  const log = readFileSync(join(prepared.env.XDG_STATE_HOME, "evolve-hud", "serve.log"), "utf8");
  assert.match(log, /listening on http:\/\/127\.0\.0\.1:/);
  assert.match(stop().stdout, /stopped evolve-hud serve/);
  assert.deepEqual(harness.serving(port), [], "`evolve-hud stop` returned while the sidecar still ran");
});

test("auto-compaction: the summary request carries the sidecar's compaction text and no HUD", async (t) => {
  const scenario: Scenario = { script, bigUsageAt: 2 };
  const run = await runOpencode({ plugin: { url: sidecar.url, compactionDeadlineMs: 3000 }, scenario, limit: { context: 8000, output: 1000 } });
  assert.equal(run.code, 0, run.output);
  assert.equal(run.summary.length, 1, "OpenCode compacted once");
  const prompt = JSON.stringify(run.summary[0].messages);
  assert.ok(!prompt.includes("<evolve-hud"), "the compaction transcript has no HUD");
  for (const section of ["## Goal", "## Instructions", "## Discoveries", "## Accomplished", "## Relevant files / directories"]) {
    assert.ok(prompt.includes(section), `${section} in the compaction request`);
  }
  assert.ok(prompt.includes("Facts recorded by evolve-hud"), prompt);
  assert.ok(prompt.includes("✓ write notes.txt"), prompt);
  // Work goes on after the compaction, with the HUD back.
  const last = run.main.at(-1);
  assert.ok(isHudMessage(last.messages.at(-1)));
  t.diagnostic(`compaction request tail: ${textOf(run.summary[0].messages.at(-1)).slice(-600)}`);
});

/** `opencode serve` over `model` for test `t`, stopped with the model after it. */
async function serve(t: { after: (f: () => unknown) => void }, model: any, env: Record<string, string>) {
  const server = await harness.opencodeServe({ model, env });
  t.after(() => {
    server.stop();
    return model.stop();
  });
  return server;
}

/** A new session of the OpenCode server at `api`. */
async function newSession(api: string): Promise<{ id: string }> {
  return (await fetch(`${api}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).json();
}

/** Asks session `id` to do the scripted task with the fake model. */
function askTheTask(api: string, id: string): Promise<Response> {
  return fetch(`${api}/session/${id}/message`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: { providerID: "fake", modelID: "fake-model" }, parts: [{ type: "text", text: "Do the task." }] }),
  });
}

test("heartbeat under opencode serve: a sidecar-written [heartbeat] prompt arrives, never while a session is busy", async (t) => {
  // The session stays busy for seconds (its second model step takes 3 s),
  // so heartbeats come due while it works and must hold back.
  const GRACE_MS = 1000;
  const { model, env } = await harness.prepare({
    plugin: { url: sidecar.url, heartbeatMs: 1000, heartbeatModel: "fake/fake-model", compactionDeadlineMs: 2000 },
    scenario: { script, beforeMain: (step) => new Promise((r) => setTimeout(r, step === 1 ? 3000 : 0)) },
  });
  const { api, output } = await serve(t, model, env);
  const session = await newSession(api);
  const busyFrom = Date.now();
  const reply = await askTheTask(api, session.id);
  assert.equal(reply.status, 200, output());
  await reply.text();
  const busyUntil = Date.now();
  assert.equal(model.main().length, script.length + 1, output());

  // A heartbeat written before this turn describes other tests' sessions;
  // wait for one that describes this session.
  const beat = await model.waitFor("heartbeat", 60_000, (r) => JSON.stringify(r.body.messages).includes(JSON.stringify(`Session "${session.id}"`).slice(1, -1)));
  // When each heartbeat started: its prompt's arrival in OpenCode (the model
  // may see it later, as OpenCode works through its own steps). One sent
  // just before the session started may arrive a moment after; none may be
  // sent while the session works.
  const sessions: any[] = await (await fetch(`${api}/session`)).json();
  const started: number[] = [];
  for (const s of sessions.filter((s) => s.id !== session.id)) {
    const messages: any[] = await (await fetch(`${api}/session/${s.id}/message`)).json();
    started.push(...messages.filter((m) => m.info.role === "user").map((m) => m.info.time.created as number));
  }
  assert.ok(started.length > 0, JSON.stringify(sessions));
  assert.ok(busyUntil - busyFrom > GRACE_MS + 2000, `busy only ${busyUntil - busyFrom} ms`);
  for (const at of started) {
    assert.ok(
      at < busyFrom + GRACE_MS || at > busyUntil,
      `a heartbeat was sent ${at - busyFrom} ms into the session's ${busyUntil - busyFrom} ms of work`,
    );
  }
  const text = JSON.stringify(beat.body.messages);
  assert.ok(text.includes("periodic heartbeat from evolve-hud"), text);
  const user = textOf(beat.body.messages.filter((m: any) => m.role === "user").at(-1));
  assert.ok(user.includes(`Session "${session.id}" has an open problem: "bash \`cat missing.txt\` exited 1`), `${user}\n(session ${session.id})\n${text.slice(text.indexOf("Recent sessions"), text.indexOf("Recent sessions") + 1500)}`);
  t.diagnostic(`heartbeat ${beat.at - busyUntil} ms after the session went idle (${busyUntil - busyFrom} ms busy)`);
});

test("heartbeat cleanup by archive: after its count, the heartbeat session is archived in OpenCode", async (t) => {
  const { model, env } = await harness.prepare({
    plugin: {
      url: sidecar.url,
      heartbeatMs: 1000,
      heartbeatModel: "fake/fake-model",
      heartbeatCleanup: "archive",
      heartbeatMaxCount: 1,
    },
    scenario: { script },
  });
  const { api, output } = await serve(t, model, env);
  const session = await newSession(api);
  const reply = await askTheTask(api, session.id);
  assert.equal(reply.status, 200, output());
  await reply.text();
  await model.waitFor("heartbeat", 60_000, (r) => JSON.stringify(r.body.messages).includes(JSON.stringify(`Session "${session.id}"`).slice(1, -1)));
  // The heartbeat session reached its count of one: it is archived, and
  // the plugin said nothing of a failed archive.
  const deadline = Date.now() + 30_000;
  let archived: any[] = [];
  while (archived.length === 0 && Date.now() < deadline) {
    const sessions: any[] = await (await fetch(`${api}/session`)).json();
    const others = sessions.filter((s) => s.id !== session.id);
    const infos = await Promise.all(others.map(async (s) => (await fetch(`${api}/session/${s.id}`)).json()));
    archived = infos.filter((s) => typeof s?.time?.archived === "number");
    if (archived.length === 0) await new Promise((r) => setTimeout(r, 500));
  }
  assert.ok(archived.length > 0, `no heartbeat session archived\n${output()}`);
  assert.ok(!output().includes("did not archive the heartbeat session"), output());
});

test("time the shim adds per step against the real sidecar", async (t) => {
  const hooks = createShim({ url: sidecar.url, token: TEST_SECRET }, { log: () => {}, env: {} });
  const steps = transforms().map((s) => s.messages);
  const rounds = Array.from({ length: 20 }, () => steps).flat();
  const { report } = await timeSteps(hooks["experimental.chat.messages.transform"]!, rounds, isHud);
  t.diagnostic(`real sidecar up: ${report}`);
});

test("a sidecar killed mid-sync and restarted: that step is left alone, the next resyncs in full", async (t) => {
  const steps = transforms()
    .filter((s) => s.name.startsWith("basic/"))
    .map((s) => s.messages as any[]);
  const first = await startSidecar();
  const port = Number(new URL(first.url).port);
  // A timeout far longer than the kill takes, so a loaded machine cannot
  // turn the reset into a timeout; the log tells which ended the step.
  const logs: string[] = [];
  const hooks = createShim({ url: first.url, token: TEST_SECRET, timeoutMs: 10_000 }, { log: (_level: string, message: string) => logs.push(message), env: {} });
  const transform = hooks["experimental.chat.messages.transform"]!;
  for (const messages of steps.slice(0, 3)) {
    const output = { messages: clone(messages) };
    await transform({}, output);
    assert.ok(isHud(output.messages.at(-1)));
  }

  // Stopped, the sidecar's kernel still takes the connection and the request,
  // but nothing answers; killed then, the request fails mid-flight.
  first.child.kill("SIGSTOP");
  await allStopped(first.child.pid!);
  const during = { messages: clone(steps[3]) };
  const killedAt = performance.now();
  const pending = transform({}, during);
  await new Promise((r) => setTimeout(r, 200));
  first.child.kill("SIGKILL");
  await pending;
  // Ended by the kill (a reset connection), not by the timeout.
  assert.ok(performance.now() - killedAt < 9_000, `the step took ${performance.now() - killedAt} ms`);
  assert.ok(!logs.some((l) => l.includes("no answer within")), logs.join("\n"));
  assert.deepEqual(during.messages, steps[3], "the step during the kill is left exactly as it came");
  await first.stop();

  const second = await startSidecar(port);
  try {
    const started = performance.now();
    const after = { messages: clone(steps[4]) };
    await transform({}, after);
    const ms = performance.now() - started;
    assert.equal(after.messages.filter(isHud).length, 1);
    assert.ok(isHud(after.messages.at(-1)), "the first step after the restart has the HUD");
    assert.deepEqual(after.messages.slice(0, -1), steps[4]);

    // The same HUD as a fresh shim's first sync of the whole array.
    const sessionID = (steps[4][0] as any).info.sessionID;
    const deleted = await fetch(`${second.url}/v1/hud/${sessionID}`, { method: "DELETE", headers: AUTH });
    assert.equal(deleted.status, 204);
    const fresh = createShim({ url: second.url, token: TEST_SECRET }, { log: () => {}, env: {} });
    const control = { messages: clone(steps[4]) };
    await fresh["experimental.chat.messages.transform"]!({}, control);
    const facts = (m: any) => String(m.parts[0].text).replace(/ v=\d+>/, ">").replace(/^Summary \(local model.*\n/m, "");
    assert.equal(facts(after.messages.at(-1)), facts(control.messages.at(-1)));
    assert.match(facts(after.messages.at(-1)), /bash/);
    t.diagnostic(`first step after the restart: ${ms.toFixed(1)} ms (a 409, then the full tail)`);
  } finally {
    await second.stop();
  }
});

/**
 * Waits until every thread of `pid` is stopped. SIGSTOP wakes one thread,
 * which stops the others when it runs: on busy cores another thread can
 * still answer a request in between, so the test waits for the whole stop.
 */
async function allStopped(pid: number): Promise<void> {
  const until = Date.now() + 10_000;
  for (;;) {
    const states = readdirSync(`/proc/${pid}/task`).map((t) => {
      // The state follows the command name, which is in parentheses.
      const stat = readFileSync(`/proc/${pid}/task/${t}/stat`, "utf8");
      return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    });
    if (states.every((s) => s === "T" || s === "t")) return;
    if (Date.now() > until) throw new Error(`threads of ${pid} not stopped after 10 s: ${states.join("")}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
