// What the user is told, and what the plugin does, in the first hour's
// awkward cases. In the real OpenCode (npm opencode-ai@1.18.33, `opencode
// serve`, its toasts read from its event stream) with the real sidecar: a
// port held by a real `python3 -m http.server` is named at the first step
// with its pid and the fix, and the HUD comes back steps after it is gone;
// a first start shows one toast and no "again"; `evolve-hud stop` is
// respected; a plugin installed both globally and in the project syncs
// once per step and says so once. On the plugin module with the helpers'
// fake sidecar: each kind of non-proof answer is a foreign holder, retried
// at every step; a restart is quiet unless it lasts; the stop marker (newer,
// older, not the user's); two copies in one process; a sidecar serving the
// facts without a model.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EvolveHudPlugin } from "../evolve-hud.ts";
import { isHud } from "../evolve-hud/hud.ts";
import { fixText } from "../evolve-hud/notify.ts";
import { clone, deadPort, FakeSidecar, TEST_SECRET, transforms } from "./helpers.ts";
import * as harness from "./opencode.ts";
import { base, hasHud, pluginSaid, project, recordToasts, refreshInstalled, serving, sidecarBin, thinking } from "./opencode.ts";

const { createShim } = EvolveHudPlugin.internals;
const step = transforms().find((s) => s.name === "basic/transform-3.json")!;
const scratch = mkdtempSync(join(tmpdir(), "evolve-hud-notices-"));

after(() => {
  rmSync(base, { recursive: true, force: true });
  rmSync(scratch, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/** A client that records the toasts and log lines the plugin sends OpenCode. */
function recordingClient() {
  const toasts: { message: string; variant: string }[] = [];
  const logs: string[] = [];
  const client = {
    tui: { showToast: async (o: any) => toasts.push(o.body) },
    app: { log: async (o: any) => logs.push(o.body.message) },
  } as any;
  return { client, toasts, logs };
}

/** One step of the agent through `hooks`; whether the HUD came, the messages otherwise untouched. */
async function stepOf(hooks: any): Promise<boolean> {
  const output = { messages: clone(step.messages) as any[] };
  await hooks["experimental.chat.messages.transform"]({}, output);
  const hud = isHud(output.messages.at(-1));
  assert.deepEqual(hud ? output.messages.slice(0, -1) : output.messages, step.messages, "nothing but the HUD changes");
  return hud;
}

/** A fake `evolve-hud` that records each start (its arguments) and then runs `body`, with its launch record and folders. */
function fakeBinary(body = "exit 0") {
  const dir = mkdtempSync(join(scratch, "launch-"));
  const marker = join(dir, "started");
  const binary = join(dir, "fake-evolve-hud");
  writeFileSync(binary, `#!/bin/sh\necho "$@" >> ${marker}\n${body}\n`);
  chmodSync(binary, 0o755);
  mkdirSync(join(dir, "config", "evolve-hud"), { recursive: true });
  writeFileSync(join(dir, "config", "evolve-hud", "launch.json"), JSON.stringify({ binary }));
  const env = { XDG_CONFIG_HOME: join(dir, "config"), XDG_STATE_HOME: join(dir, "state"), PATH: "/usr/bin:/bin" };
  const starts = () => (existsSync(marker) ? readFileSync(marker, "utf8").split("\n").filter(Boolean).length : 0);
  return { dir, env, starts, state: join(dir, "state", "evolve-hud") };
}

/** A real `python3 -m http.server` on `port`, serving an empty folder; what it logged (each request). */
async function pythonServer(port: number): Promise<{ child: ChildProcess; said(): string; stop(): Promise<void> }> {
  const root = mkdtempSync(join(scratch, "www-"));
  const child = spawn("python3", ["-m", "http.server", String(port), "--bind", "127.0.0.1"], { cwd: root, stdio: ["ignore", "ignore", "pipe"] });
  let said = "";
  child.stderr!.on("data", (d) => (said += d));
  for (let i = 0; ; i++) {
    if (await fetch(`http://127.0.0.1:${port}/`).then(() => true, () => false)) break;
    if (i > 200) throw new Error(`python3 -m http.server did not listen on ${port}: ${said}`);
    await sleep(50);
  }
  const stop = () =>
    new Promise<void>((ok) => {
      if (child.exitCode !== null || child.signalCode !== null) return ok();
      child.once("exit", () => ok());
      child.kill("SIGKILL");
    });
  return { child, said: () => said, stop };
}

/** A server that answers every request with `answer`; the identity questions it got. */
async function answering(answer: (res: ServerResponse, req: IncomingMessage) => void) {
  let questions = 0;
  const others: string[] = [];
  const server = createServer((req, res) => {
    if (req.url?.startsWith("/v1/identity")) questions++;
    else others.push(`${req.method} ${req.url}`);
    answer(res, req);
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    questions: () => questions,
    others,
    stop: () => new Promise<void>((ok) => (server.closeAllConnections(), server.close(() => ok()))),
  };
}

// --- The plugin module --------------------------------------------------------------

test("any answer to the identity question that is not a proof is another program on the port: told at the first step, asked again at every step", async (t) => {
  const kinds: [string, (res: ServerResponse) => void][] = [
    ["404, not JSON", (res) => (res.writeHead(404, { "content-type": "text/html" }), res.end("<html>File not found</html>"))],
    ["401, JSON", (res) => (res.writeHead(401, { "content-type": "application/json" }), res.end('{"error":"unauthorized"}'))],
    ["200, not JSON", (res) => (res.writeHead(200, { "content-type": "text/plain" }), res.end("hello"))],
    ["200, JSON without a proof", (res) => (res.writeHead(200, { "content-type": "application/json" }), res.end('{"ok":true}'))],
    ["200, a wrong proof", (res) => (res.writeHead(200, { "content-type": "application/json" }), res.end(`{"proof":"${"0".repeat(64)}"}`))],
  ];
  const whats = ["it answered /v1/identity with 404, not JSON", "it answered /v1/identity with 401", "it answered /v1/identity with 200, not JSON", "its answer to /v1/identity holds no proof", "it does not know your secret"];
  for (const [i, [kind, answer]] of kinds.entries()) {
    const server = await answering(answer);
    t.after(() => server.stop());
    const { client, toasts, logs } = recordingClient();
    // Autostart off: nothing to start here, and the default 30 s cooldown would have kept later steps off.
    const hooks = createShim({ url: server.url, token: TEST_SECRET, autostart: false }, { env: {} }, client);
    assert.equal(await stepOf(hooks), false, kind);
    assert.equal(toasts.length, 1, `${kind}: told at the first step: ${JSON.stringify(toasts)}`);
    assert.equal(toasts[0].variant, "warning");
    assert.match(toasts[0].message, new RegExp(`^No HUD for the agent: another program holds port ${server.port}: node \\(pid ${process.pid}\\)\\. It is not your evolve-hud sidecar \\(${whats[i].replace(/[()/]/g, "\\$&")}\\), and nothing was sent to it\\. Stop it`), kind);
    assert.match(toasts[0].message, new RegExp(`\`EVOLVE_HUD_PORT=${server.port + 1} opencode\``));
    assert.equal(await stepOf(hooks), false);
    assert.equal(await stepOf(hooks), false);
    assert.equal(server.questions(), 3, `${kind}: asked at every step, no cooldown`);
    assert.deepEqual(server.others, [], `${kind}: nothing but the question reached it`);
    assert.equal(toasts.length, 1, `${kind}: told once`);
    assert.equal(logs.filter((l) => l.includes("another program holds port")).length, 1, logs.join("\n"));
    assert.match(logs.join("\n"), /trying again at every call/);
  }
});

test("python3 -m http.server on the port: named with its pid and the fix at the first step; once it is gone, the sidecar is started at the next step", async (t) => {
  const port = await deadPort();
  const python = await pythonServer(port);
  t.after(() => python.stop());
  const fake = fakeBinary();
  const { client, toasts } = recordingClient();
  const hooks = createShim({ url: `http://127.0.0.1:${port}`, token: TEST_SECRET }, { env: fake.env }, client);
  assert.equal(await stepOf(hooks), false);
  assert.equal(toasts.length, 1, JSON.stringify(toasts));
  const told = toasts[0].message;
  t.diagnostic(`the notice: ${told}`);
  assert.match(told, new RegExp(`another program holds port ${port}: python3 \\(pid ${python.child.pid}\\)\\.`));
  assert.match(told, new RegExp(`it answered /v1/identity with 404`));
  assert.match(told, new RegExp(`Stop it \\(\`kill ${python.child.pid}\`\\), or give the HUD another port: \`EVOLVE_HUD_PORT=${port + 1} opencode\``));
  assert.equal(await stepOf(hooks), false);
  // Python logs each request to its stderr after answering it: its line may come a moment after the answer.
  const questions = () => (python.said().match(/"GET \/v1\/identity\?nonce=\w+ HTTP/g) ?? []).length;
  for (let i = 0; i < 100 && questions() < 2; i++) await sleep(20);
  assert.equal(questions(), 2, python.said());
  assert.doesNotMatch(python.said(), /POST/, "no transcript reached it");
  assert.equal(fake.starts(), 0, "nothing started while the port is held");

  await python.stop();
  assert.equal(await stepOf(hooks), false, "refused: the sidecar is started");
  for (let i = 0; i < 100 && fake.starts() === 0; i++) await sleep(20);
  assert.equal(fake.starts(), 1, "started at the first step after the port was freed");
  // As the started sidecar would: it answers on the port.
  const sidecar = await FakeSidecar.start("127.0.0.1", port);
  t.after(() => sidecar.stop());
  await sleep(1100); // the retry 1 s after a refused connection
  assert.equal(await stepOf(hooks), true, "the HUD is back");
  assert.deepEqual(
    toasts.map((x) => x.variant),
    ["warning", "info", "success"],
    JSON.stringify(toasts.map((x) => x.message)),
  );
  assert.match(toasts[1].message, /^Starting the sidecar/);
  assert.match(toasts[2].message, /answers again/, "back, after an off notice the user saw");
});

test("a first start is one notice; a restart is quiet unless the HUD stays off past 10 s; 'again' only after a notice of it going", async (t) => {
  const port = await deadPort();
  const fake = fakeBinary();
  let clock = 1_000_000;
  const { client, toasts } = recordingClient();
  const hooks = createShim({ url: `http://127.0.0.1:${port}`, token: TEST_SECRET }, { env: fake.env, now: () => clock }, client);
  assert.equal(await stepOf(hooks), false);
  let sidecar = await FakeSidecar.start("127.0.0.1", port);
  clock += 1500;
  assert.equal(await stepOf(hooks), true);
  assert.deepEqual(toasts.map((x) => x.message), ["Starting the sidecar (evolve-hud serve)…"], "a first start: one toast");

  // The sidecar dies; the plugin starts it again without a word.
  await sidecar.stop();
  assert.equal(await stepOf(hooks), false);
  clock += 5000;
  assert.equal(await stepOf(hooks), false);
  assert.equal(toasts.length, 1, JSON.stringify(toasts));
  for (let i = 0; i < 250 && fake.starts() < 2; i++) await sleep(20);
  assert.ok(fake.starts() >= 2, "started again");
  // Off past 10 s: now the user is told.
  clock += 6000;
  assert.equal(await stepOf(hooks), false);
  assert.equal(toasts.length, 2, JSON.stringify(toasts));
  assert.equal(toasts[1].variant, "warning");
  assert.match(toasts[1].message, new RegExp(`^No HUD for the agent for 11 s: no sidecar answers at http://127.0.0.1:${port} \\(connection refused\\), and the sidecar the plugin starts does not answer\\. Its log: .*serve\\.log`));
  sidecar = await FakeSidecar.start("127.0.0.1", port);
  t.after(() => sidecar.stop());
  clock += 2000;
  assert.equal(await stepOf(hooks), true);
  assert.equal(toasts.length, 3);
  assert.equal(toasts[2].message, "The sidecar answers again: the agent gets the HUD.");

  // A short outage: quiet both ways.
  await sidecar.stop();
  assert.equal(await stepOf(hooks), false);
  sidecar = await FakeSidecar.start("127.0.0.1", port);
  clock += 2000;
  assert.equal(await stepOf(hooks), true);
  assert.equal(toasts.length, 3, JSON.stringify(toasts.slice(3)));
});

test("the stop marker: newer than the plugin, no start and one notice; older, a start; not the user's file, ignored", async (t) => {
  const port = await deadPort();
  const run = async (marker: (path: string) => void, steps = 3) => {
    const fake = fakeBinary();
    mkdirSync(fake.state, { recursive: true, mode: 0o700 });
    marker(join(fake.state, `stopped-${port}`));
    let clock = 2_000_000;
    const { client, toasts, logs } = recordingClient();
    const hooks = createShim({ url: `http://127.0.0.1:${port}`, token: TEST_SECRET }, { env: fake.env, now: () => clock, startedAt: 1_000_000 }, client);
    for (let i = 0; i < steps; i++) {
      await stepOf(hooks);
      clock += 2000; // past the retry after a refused connection, and the backoff
    }
    await sleep(300);
    return { starts: fake.starts(), toasts: toasts.map((x) => x.message), logs };
  };
  const stopped = await run((path) => writeFileSync(path, JSON.stringify({ at: 1_500_000 }), { mode: 0o600 }));
  assert.equal(stopped.starts, 0, "not started");
  assert.deepEqual(stopped.toasts, ["The sidecar was stopped with `evolve-hud stop`; the HUD is off until the next OpenCode start, or `evolve-hud serve`."]);
  assert.equal(stopped.logs.filter((l) => l.includes("stopped with")).length, 1, stopped.logs.join("\n"));

  const older = await run((path) => writeFileSync(path, JSON.stringify({ at: 999_999 }), { mode: 0o600 }), 1);
  assert.equal(older.starts, 1, "a marker from before this OpenCode started is ignored");
  assert.deepEqual(older.toasts, ["Starting the sidecar (evolve-hud serve)…"]);

  const elsewhere = join(scratch, "marker-elsewhere");
  writeFileSync(elsewhere, JSON.stringify({ at: 1_500_000 }), { mode: 0o600 });
  const linked = await run((path) => symlinkSync(elsewhere, path), 1);
  assert.equal(linked.starts, 1, "a link is not the user's marker");
  assert.match(linked.logs.join("\n"), /ignoring the stop marker: .*stopped-\d+ is a symbolic link/);

  const loose = await run((path) => (writeFileSync(path, JSON.stringify({ at: 1_500_000 })), chmodSync(path, 0o666)), 1);
  assert.equal(loose.starts, 1, "a marker others may write is not used");
});

test("loaded twice in one process (two files): one copy syncs, the other stays inert and says so once", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  const first = (await import("../evolve-hud.ts")).default.server;
  // Another file of the same plugin (as a global and a project install are).
  const copy: string = "../evolve-hud.ts?copy=project";
  const second = ((await import(copy)) as typeof import("../evolve-hud.ts")).default.server;
  const directory = mkdtempSync(join(scratch, "project-"));
  const { client, toasts, logs } = recordingClient();
  const options = { url: sidecar.url, token: TEST_SECRET, autostart: false };
  const input = { client, directory, worktree: directory } as any;
  const copies = [await first(input, options), await second(input, options)];
  assert.equal(copies[1]["experimental.chat.messages.transform"], undefined, "the second copy has no transform");
  for (let i = 0; i < 3; i++) {
    const output = { messages: clone(step.messages) as any[] };
    for (const hooks of copies) await hooks["experimental.chat.messages.transform"]?.({}, output);
    assert.equal(output.messages.filter(isHud).length, 1);
    for (const hooks of copies) await hooks.event?.({ event: { type: "session.idle", properties: { sessionID: "ses_twice" } } as any });
  }
  await sleep(200);
  assert.equal(sidecar.syncs().length, 3, "one sync per step");
  assert.equal(sidecar.requests.filter((r) => r.path === "/v1/hud/event").length, 3, "one event each");
  const twice = toasts.filter((x) => x.message.includes("installed twice"));
  assert.equal(twice.length, 1, JSON.stringify(toasts));
  assert.match(twice[0].message, /^evolve-hud is installed twice \(.*evolve-hud\.ts and .*evolve-hud\.ts\); using one \(the first\)\. Remove one: `evolve-hud install-shim --uninstall` \(in the project\) or `evolve-hud install-shim --uninstall --global`\.$/);
  assert.equal(logs.filter((l) => l.includes("installed twice")).length, 1, logs.join("\n"));

  // OpenCode setting the project up again (the same file): no second copy.
  const again = await first(input, options);
  assert.equal(typeof again["experimental.chat.messages.transform"], "function");
  // The global copy in another project: it serves that one.
  const other = mkdtempSync(join(scratch, "project-"));
  const elsewhere = await second({ client, directory: other, worktree: other } as any, options);
  assert.equal(typeof elsewhere["experimental.chat.messages.transform"], "function");
  assert.equal(logs.filter((l) => l.includes("installed twice")).length, 1);
});

test("a sidecar serving the facts without a model: one notice with the fix, and the HUD at every step", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  sidecar.health = {
    status: "ready",
    model: "none",
    engine: "none",
    missing: "the model qwen2.5-coder-0.5b is not on disk",
    fix: "evolve-hud pull qwen2.5-coder-0.5b",
  };
  const { client, toasts, logs } = recordingClient();
  const hooks = createShim({ url: sidecar.url, token: TEST_SECRET, autostart: false }, { env: {} }, client);
  for (let i = 0; i < 4; i++) assert.equal(await stepOf(hooks), true, `the HUD at step ${i}`);
  assert.equal(toasts.length, 1, JSON.stringify(toasts));
  assert.equal(toasts[0].variant, "warning");
  assert.equal(
    toasts[0].message,
    "The HUD runs on facts alone: the model qwen2.5-coder-0.5b is not on disk. For the model's findings: `evolve-hud pull qwen2.5-coder-0.5b`; the sidecar takes the model up by itself once it is on disk.",
  );
  assert.equal(logs.filter((l) => l.includes("without a model")).length, 1, logs.join("\n"));
});

// --- The real OpenCode --------------------------------------------------------------

/** `opencode serve` in a prepared project with its toasts recorded; one prompt; what it showed. */
async function serveAndPrompt(prepared: harness.Prepared, t: any) {
  const server = await harness.opencodeServe(prepared);
  const recorder = recordToasts(server);
  t.after(() => {
    recorder.stop();
    server.stop();
  });
  await sleep(300); // the event stream is open
  await harness.promptServer(server);
  await sleep(500); // the last toasts arrive
  return { server, toasts: recorder.toasts };
}

test("real OpenCode: python3 -m http.server on the port is named at the first step; once it is gone the plugin starts the sidecar and the HUD is back", async (t) => {
  const port = await deadPort();
  const python = await pythonServer(port);
  t.after(() => python.stop());
  let killedAt = 0;
  let toldBy = -1;
  let toasts: harness.Toast[] = [];
  const prepared = await harness.prepare({
    installShim: true,
    scenario: thinking(8, 1500, async (step) => {
      // The first step's transform has run: its notice is on its way.
      if (step === 0) {
        for (let i = 0; i < 60 && !toasts.some((x) => x.message.includes("another program")); i++) await sleep(50);
        toldBy = toasts.some((x) => x.message.includes("another program")) ? 0 : -1;
      }
      if (step === 1) {
        await python.stop();
        killedAt = Date.now();
      }
    }),
    env: { EVOLVE_HUD_PORT: String(port), EVOLVE_HUD_AUTOSTART: "on" },
  });
  t.after(async () => {
    spawnSync(sidecarBin, ["stop", "--port", String(port)], { env: prepared.env });
    await prepared.model.stop();
  });
  const server = await harness.opencodeServe(prepared);
  const recorder = recordToasts(server);
  toasts = recorder.toasts;
  t.after(() => {
    recorder.stop();
    server.stop();
  });
  await sleep(300);
  await harness.promptServer(server);
  await sleep(500);
  const said = pluginSaid(prepared).join("\n");
  const main = prepared.model.requests.filter((r) => r.kind === "main");
  const marks = main.map((r, i) => `${i}:${((r.at - killedAt) / 1000).toFixed(1)}s:${hasHud(r) ? "✓" : "✗"}`).join(" ");
  t.diagnostic(`toasts: ${JSON.stringify(toasts.map((x) => `${x.variant}: ${x.message}`), null, 1)}`);
  t.diagnostic(`main requests (index:seconds from the kill:HUD): ${marks}`);
  assert.equal(toldBy, 0, `the notice came at the first step\n${said}`);
  const foreign = toasts.filter((x) => x.message.includes("another program"));
  assert.equal(foreign.length, 1, JSON.stringify(toasts));
  assert.match(foreign[0].message, new RegExp(`another program holds port ${port}: python3 \\(pid ${python.child.pid}\\)\\.`));
  assert.match(foreign[0].message, new RegExp(`\`kill ${python.child.pid}\`.*\`EVOLVE_HUD_PORT=${port + 1} opencode\``));
  assert.ok(main.slice(0, 3).every((r) => !hasHud(r)), "no HUD while the port is held: the messages as they came");
  assert.doesNotMatch(python.said(), /POST/, "no transcript reached it");
  assert.ok(main.length >= 6, marks);
  assert.ok(main.slice(4).every(hasHud), `the HUD from the second step after the kill on: ${marks}\n${said}`);
  const firstHud = main.find(hasHud)!;
  assert.ok(firstHud.at - killedAt < 10_000, `the HUD ${firstHud.at - killedAt} ms after the kill: no 30 s wait`);
  assert.equal(serving(port).length, 1, "the plugin started the sidecar");
  assert.ok(!toasts.some((x) => /still loading|exited|failed/.test(x.message)), JSON.stringify(toasts));
});

test("real OpenCode: a first start (an old stop marker left over) shows at most one toast, none 'again', and the HUD comes", async (t) => {
  const port = await deadPort();
  const prepared = await harness.prepare({ installShim: true, scenario: thinking(4, 1500), env: { EVOLVE_HUD_PORT: String(port), EVOLVE_HUD_AUTOSTART: "on" } });
  t.after(async () => {
    spawnSync(sidecarBin, ["stop", "--port", String(port)], { env: prepared.env });
    await prepared.model.stop();
  });
  // `evolve-hud stop` before this OpenCode started: it does not hold the plugin back.
  const state = join(prepared.env.XDG_STATE_HOME, "evolve-hud");
  mkdirSync(state, { recursive: true, mode: 0o700 });
  writeFileSync(join(state, `stopped-${port}`), JSON.stringify({ at: Date.now() - 3_600_000 }), { mode: 0o600 });
  const { toasts } = await serveAndPrompt(prepared, t);
  const main = prepared.model.requests.filter((r) => r.kind === "main");
  t.diagnostic(`toasts: ${JSON.stringify(toasts.map((x) => `${x.variant}: ${x.message}`))}; HUD: ${main.map((r) => (hasHud(r) ? "✓" : "✗")).join("")}`);
  assert.ok(toasts.length <= 1, JSON.stringify(toasts));
  assert.ok(!toasts.some((x) => /again|back/i.test(x.message)), JSON.stringify(toasts));
  assert.ok(!toasts.some((x) => x.variant === "warning"), JSON.stringify(toasts));
  assert.ok(main.slice(2).every(hasHud), `the HUD from the third request on: ${main.map(hasHud)}\n${pluginSaid(prepared).join("\n")}`);
});

test("real OpenCode: after `evolve-hud stop` the plugin starts no sidecar, and says so once", async (t) => {
  const port = await deadPort();
  let stoppedAt = 0;
  let markerBy = "";
  const prepared = await harness.prepare({
    installShim: true,
    scenario: thinking(8, 1200, (step) => {
      if (step !== 3) return;
      const stopped = spawnSync(sidecarBin, ["stop", "--port", String(port)], { env: prepared.env, encoding: "utf8" });
      assert.match(stopped.stdout, /stopped evolve-hud serve/, stopped.stdout + stopped.stderr);
      stoppedAt = Date.now();
      const marker = join(prepared.env.XDG_STATE_HOME, "evolve-hud", `stopped-${port}`);
      markerBy = "evolve-hud stop";
      if (!existsSync(marker)) {
        // A sidecar built before `stop` wrote its marker: the marker it would write.
        writeFileSync(marker, JSON.stringify({ at: Date.now() }), { mode: 0o600 });
        markerBy = "this test (the binary wrote none)";
      }
    }),
    env: { EVOLVE_HUD_PORT: String(port), EVOLVE_HUD_AUTOSTART: "on" },
  });
  t.after(async () => {
    spawnSync(sidecarBin, ["stop", "--port", String(port)], { env: prepared.env });
    await prepared.model.stop();
  });
  const { toasts } = await serveAndPrompt(prepared, t);
  const main = prepared.model.requests.filter((r) => r.kind === "main");
  const marks = main.map((r) => `${((r.at - stoppedAt) / 1000).toFixed(1)}s:${hasHud(r) ? "✓" : "✗"}`).join(" ");
  t.diagnostic(`marker written by ${markerBy}; toasts: ${JSON.stringify(toasts.map((x) => `${x.variant}: ${x.message}`))}; requests from the stop: ${marks}`);
  assert.ok(stoppedAt > 0);
  assert.ok(main.slice(2, 4).every(hasHud), `the HUD before the stop: ${marks}`);
  assert.ok(main.slice(4).every((r) => !hasHud(r)), `no HUD after the stop: ${marks}`);
  assert.deepEqual(serving(port), [], "no sidecar was started again");
  const told = toasts.filter((x) => x.message.includes("evolve-hud stop"));
  assert.equal(told.length, 1, JSON.stringify(toasts));
  assert.equal(told[0].message, "The sidecar was stopped with `evolve-hud stop`; the HUD is off until the next OpenCode start, or `evolve-hud serve`.");
  assert.ok(!toasts.some((x) => /again/.test(x.message)), JSON.stringify(toasts));
  assert.equal(pluginSaid(prepared).filter((l) => l.includes("stopped with")).length, 1);
});

test("real OpenCode: installed globally and in the project, one copy syncs once per step, and the user is told once", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  const prepared = await harness.prepare({ installShim: true, scenario: thinking(3, 0), env: { EVOLVE_HUD_URL: sidecar.url } });
  t.after(() => prepared.model.stop());
  const global = spawnSync(sidecarBin, ["install-shim", "--global"], { env: { ...process.env, ...prepared.env }, encoding: "utf8" });
  assert.equal(global.status, 0, global.stderr);
  const globalFile = join(prepared.env.XDG_CONFIG_HOME, "opencode", "plugins", "evolve-hud.ts");
  assert.ok(existsSync(globalFile), global.stdout);
  refreshInstalled(join(prepared.env.XDG_CONFIG_HOME, "opencode", "plugins"));
  assert.ok(existsSync(join(project, ".opencode", "plugins", "evolve-hud.ts")));
  const { toasts } = await serveAndPrompt(prepared, t);
  const main = prepared.model.requests.filter((r) => r.kind === "main");
  t.diagnostic(`${main.length} main requests, ${sidecar.syncs().length} syncs; toasts: ${JSON.stringify(toasts.map((x) => x.message))}`);
  assert.equal(main.length, 4);
  assert.equal(sidecar.syncs().length, main.length, "one sync per step");
  assert.ok(main.slice(1).every(hasHud));
  const twice = toasts.filter((x) => x.message.includes("installed twice"));
  assert.equal(twice.length, 1, JSON.stringify(toasts));
  assert.ok(twice[0].message.includes(globalFile) && twice[0].message.includes(join(project, ".opencode", "plugins", "evolve-hud.ts")), twice[0].message);
  const said = pluginSaid(prepared);
  assert.equal(said.filter((l) => l.includes("installed twice")).length, 1, said.join("\n"));
});

test("a fix naming the sidecar by its path (not on PATH, as npm installs it) reads as the same `pull`", () => {
  const taken = "; the sidecar takes the model up by itself once it is on disk.";
  assert.equal(fixText("/home/me/.cache/opencode/node_modules/opencode-evolve-hud-linux-x64/bin/evolve-hud pull qwen"), "For the model's findings: `/home/me/.cache/opencode/node_modules/opencode-evolve-hud-linux-x64/bin/evolve-hud pull qwen`" + taken);
  assert.equal(fixText("'/home/my files/evolve-hud' pull qwen"), "For the model's findings: `'/home/my files/evolve-hud' pull qwen`" + taken);
  assert.equal(fixText("evolve-hud install-shim --model FILE.gguf   (a GGUF file)"), "For the model's findings: `evolve-hud install-shim --model FILE.gguf` (a GGUF file).");
  assert.equal(fixText("/x/not-evolve-hud pull qwen"), "For the model's findings: `/x/not-evolve-hud pull qwen`.");
});
