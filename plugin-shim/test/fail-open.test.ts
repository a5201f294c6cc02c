// Fail-open tests: a sidecar that is down, hangs, fails, talks nonsense or is
// slow never changes the messages or fails the hook, and the circuit breaker
// caps what it costs. Each test reports the time the hook added per call.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { EvolveHudPlugin } from "../evolve-hud.ts";
import { isHud } from "../evolve-hud/hud.ts";
import { FailOpen, type Log } from "../evolve-hud/log.ts";
import { SidecarError } from "../evolve-hud/sidecar.ts";
import { clone, deadPort, FakeSidecar, TEST_SECRET, timeSteps, transforms, type Behaviour } from "./helpers.ts";

const { createShim } = EvolveHudPlugin.internals;

const step = transforms().find((s) => s.name === "basic/transform-6.json")!;
// The plugin's timeout in these tests. The suite's files run two at a time,
// so a neighbour may hold the CPU for a while: an answer in time comes
// hundreds of milliseconds inside it.
const TIMEOUT = 600;
const THRESHOLD = 3;
// A cooldown no neighbour's hold on the CPU outlasts between two steps.
const COOLDOWN = 1000;
const CALLS = 12;

interface Run {
  times: number[];
  changed: number;
  logs: string[];
}

async function run(url: string, calls = CALLS, cooldownMs = 60_000, env: Record<string, string> = {}): Promise<Run> {
  const logs: string[] = [];
  const log: Log = (level, message) => logs.push(`${level}: ${message}`);
  const hooks = createShim({ url, token: TEST_SECRET, timeoutMs: TIMEOUT, failureThreshold: THRESHOLD, cooldownMs, autostart: false }, { log, env });
  const transform = hooks["experimental.chat.messages.transform"]!;
  const times: number[] = [];
  let changed = 0;
  for (let i = 0; i < calls; i++) {
    const output = { messages: clone(step.messages) as any[] };
    const started = performance.now();
    await transform({}, output); // must not throw
    times.push(performance.now() - started);
    try {
      assert.deepEqual(output.messages, step.messages);
    } catch {
      changed++;
    }
  }
  return { times, changed, logs };
}

const ms = (v: number) => `${v.toFixed(2)} ms`;
const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / Math.max(v.length, 1);

function report(t: { diagnostic(s: string): void }, label: string, r: Run, open: number) {
  const before = r.times.slice(0, open);
  const after = r.times.slice(open);
  t.diagnostic(`${label}: before the circuit opens ${ms(mean(before))}/call (${before.length} calls), after ${ms(mean(after))}/call (max ${ms(Math.max(...after))})`);
}

async function failing(t: any, behaviour: Behaviour, opensAfter: number) {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  sidecar.behaviour = behaviour;
  const r = await run(sidecar.url);
  assert.equal(r.changed, 0, "messages stay as they came");
  assert.equal(sidecar.syncs().length, opensAfter, "the circuit opens and later calls skip the sidecar");
  assert.equal(r.logs.length, 1, `one log line for the state change: ${r.logs}`);
  report(t, JSON.stringify(behaviour), r, opensAfter);
  return r;
}

test("sidecar down: a refused connection opens the circuit at once, and it is tried again 1 s later", async (t) => {
  const r = await run(`http://127.0.0.1:${await deadPort()}`);
  assert.equal(r.changed, 0);
  assert.equal(r.logs.length, 1);
  assert.match(r.logs[0], /no sidecar answers at .* \(connection refused\)\); HUD off, trying again every 1 s/);
  report(t, "down", r, 1);
});

test("sidecar down, autostart on: the recorded binary is started once, detached, with the port", async (t) => {
  const { mkdtempSync, writeFileSync, readFileSync, existsSync, mkdirSync, chmodSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const dir = mkdtempSync(join(tmpdir(), "evolve-hud-launch-"));
  const marker = join(dir, "started");
  const binary = join(dir, "fake-evolve-hud");
  writeFileSync(binary, `#!/bin/sh\necho "$@" >> ${marker}\n`);
  chmodSync(binary, 0o755);
  mkdirSync(join(dir, "config", "evolve-hud"), { recursive: true });
  writeFileSync(join(dir, "config", "evolve-hud", "launch.json"), JSON.stringify({ binary, model: "m.gguf" }));
  const port = await deadPort();
  const logs: string[] = [];
  const hooks = createShim(
    { url: `http://127.0.0.1:${port}`, timeoutMs: TIMEOUT },
    { log: (_, m) => logs.push(m), env: { XDG_CONFIG_HOME: join(dir, "config"), XDG_STATE_HOME: join(dir, "state"), PATH: "/usr/bin:/bin" } },
  );
  for (let i = 0; i < 3; i++) {
    await hooks["experimental.chat.messages.transform"]!({}, { messages: clone(step.messages) as any[] });
  }
  // Until the binary's line is whole: the shell creates the marker before it writes to it.
  const written = () => (existsSync(marker) ? readFileSync(marker, "utf8") : "");
  for (let i = 0; i < 50 && !written().endsWith("\n"); i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(readFileSync(marker, "utf8"), `serve --port ${port} --facts-without-model --model m.gguf\n`, "started once");
  assert.ok(existsSync(join(dir, "state", "evolve-hud", "serve.log")));
  assert.match(logs.join("\n"), /started `.*fake-evolve-hud serve --port/);
});

test("sidecar hangs: one timeout opens the circuit", async (t) => {
  const r = await failing(t, { kind: "hang" }, 1);
  // The timeout is honoured: the first call waits for it, and not much longer.
  assert.ok(r.times[0] >= TIMEOUT - 5 && r.times[0] < TIMEOUT + 2000, ms(r.times[0]));
  assert.match(r.logs[0], new RegExp(`no answer within ${TIMEOUT} ms`));
});

test("a sync the sidecar holds for the model (its head at once) may take waitMs more; a hang still fails at timeoutMs", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  sidecar.behaviour = { kind: "held", ms: TIMEOUT * 3 };
  const hooks = createShim({ url: sidecar.url, token: TEST_SECRET, timeoutMs: TIMEOUT, waitMs: TIMEOUT * 5 }, { log: () => {}, env: {} });
  const output = { messages: clone(step.messages) as any[] };
  await hooks["experimental.chat.messages.transform"]!({}, output);
  assert.ok(isHud(output.messages.at(-1)), "the held answer is taken");
  // Held past timeoutMs + waitMs: a timeout.
  sidecar.behaviour = { kind: "held", ms: TIMEOUT * 8 };
  const logs: string[] = [];
  const late = createShim({ url: sidecar.url, token: TEST_SECRET, timeoutMs: TIMEOUT, waitMs: TIMEOUT * 5 }, { log: (_, m) => logs.push(m), env: {} });
  const again = { messages: clone(step.messages) as any[] };
  await late["experimental.chat.messages.transform"]!({}, again);
  assert.ok(!isHud(again.messages.at(-1)));
  assert.match(logs.join("\n"), new RegExp(`no answer within ${TIMEOUT * 6} ms`));
});

test("sidecar answers 500: the circuit opens after the threshold", async (t) => {
  await failing(t, { kind: "status", status: 500 }, THRESHOLD);
});

test("sidecar answers garbage: the circuit opens after the threshold", async (t) => {
  await failing(t, { kind: "garbage" }, THRESHOLD);
});

test("sidecar slower than the timeout counts as a hang; slow but in time still gets the HUD", async (t) => {
  await failing(t, { kind: "slow", ms: TIMEOUT * 2 }, 1);
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  sidecar.behaviour = { kind: "slow", ms: 50 };
  const hooks = createShim({ url: sidecar.url, token: TEST_SECRET, timeoutMs: TIMEOUT }, { log: () => {}, env: {} });
  const output = { messages: clone(step.messages) as any[] };
  const started = performance.now();
  await hooks["experimental.chat.messages.transform"]!({}, output);
  const took = performance.now() - started;
  assert.ok(isHud(output.messages.at(-1)));
  t.diagnostic(`slow (50 ms) sidecar: ${ms(took)} per call, HUD present`);
});

test("the circuit half-opens after the cooldown and closes when the sidecar is back", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  sidecar.behaviour = { kind: "status", status: 503 };
  const logs: string[] = [];
  const hooks = createShim(
    { url: sidecar.url, token: TEST_SECRET, timeoutMs: TIMEOUT, failureThreshold: 2, cooldownMs: COOLDOWN },
    { log: (_, m) => logs.push(m), env: {} },
  );
  const transform = hooks["experimental.chat.messages.transform"]!;
  const step1 = async () => {
    const output = { messages: clone(step.messages) as any[] };
    await transform({}, output);
    return isHud(output.messages.at(-1));
  };
  assert.equal(await step1(), false);
  assert.equal(await step1(), false); // opens
  assert.equal(await step1(), false); // skipped
  assert.equal(sidecar.syncs().length, 2);
  await new Promise((r) => setTimeout(r, COOLDOWN + 100));
  assert.equal(await step1(), false); // the trial fails: open again at once
  assert.equal(sidecar.syncs().length, 3);
  sidecar.behaviour = { kind: "ok" };
  assert.equal(await step1(), false); // still cooling down
  await new Promise((r) => setTimeout(r, COOLDOWN + 100));
  assert.equal(await step1(), true); // the trial succeeds: closed
  assert.equal(await step1(), true);
  assert.equal(logs.length, 2, logs.join("\n"));
  assert.match(logs[1], /reachable again/);
});

test("sidecar up: the time one step adds", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  const hooks = createShim({ url: sidecar.url, token: TEST_SECRET }, { log: () => {}, env: {} });
  const arrays = Array.from({ length: 50 }, () => step.messages);
  const { report } = await timeSteps(hooks["experimental.chat.messages.transform"]!, arrays, isHud);
  t.diagnostic(`fake sidecar up: ${report}`);
});

test("a slow compaction (model-bound) timeout leaves the circuit closed for the HUD", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  sidecar.behaviour = { kind: "hang" };
  const hooks = createShim(
    { url: sidecar.url, token: TEST_SECRET, timeoutMs: TIMEOUT, compactionDeadlineMs: 100 },
    { log: () => {}, env: {} },
  );
  const output: { context: string[]; prompt?: string } = { context: [] };
  await hooks["experimental.session.compacting"]!({ sessionID: "ses_x" }, output);
  assert.deepEqual(output.context, []);
  // The next step still reaches the sidecar (a transport timeout would have opened the circuit).
  sidecar.behaviour = { kind: "ok" };
  const step2 = { messages: clone(step.messages) as any[] };
  await hooks["experimental.chat.messages.transform"]!({}, step2);
  assert.ok(isHud(step2.messages.at(-1)));
});

test("the user is told through OpenCode's UI, once, when the HUD goes off and why, and when it is back", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  sidecar.behaviour = { kind: "status", status: 503 };
  const toasts: any[] = [];
  const client = { tui: { showToast: async (o: any) => toasts.push(o.body) }, app: { log: async () => {} } } as any;
  const hooks = createShim({ url: sidecar.url, token: TEST_SECRET, timeoutMs: TIMEOUT, failureThreshold: 1, cooldownMs: COOLDOWN }, { env: {} }, client);
  const transform = hooks["experimental.chat.messages.transform"]!;
  const stepOnce = () => transform({}, { messages: clone(step.messages) as any[] });
  await stepOnce();
  await stepOnce();
  assert.equal(toasts.length, 1, JSON.stringify(toasts));
  assert.equal(toasts[0].variant, "warning");
  assert.match(toasts[0].message, /^No HUD for the agent: \/v1\/hud\/sync answered 503.*evolve-hud doctor/);
  sidecar.behaviour = { kind: "ok" };
  await new Promise((r) => setTimeout(r, COOLDOWN + 100));
  await stepOnce();
  await stepOnce();
  assert.equal(toasts.length, 2, JSON.stringify(toasts));
  assert.equal(toasts[1].variant, "success");
  assert.match(toasts[1].message, /answers again/);
});

test("an unexpected failure in a hook does not escape it, and each kind is logged once", async () => {
  const logs: string[] = [];
  const hooks = createShim({ url: `http://127.0.0.1:${await deadPort()}`, autostart: false }, { log: (_, m) => logs.push(m), env: {} });
  const broken = (error: Error) => ({ get event(): never { throw error; } }) as any;
  await hooks.event!(broken(new TypeError("first")));
  await hooks.event!(broken(new TypeError("second")));
  await hooks.event!(broken(new RangeError("third")));
  assert.equal(logs.length, 2, logs.join("\n"));
  assert.match(logs[0], /^evolve-hud: event failed open \(TypeError: first\)/);
  assert.match(logs[1], /^evolve-hud: event failed open \(RangeError: third\)/);
});

/** A fake `evolve-hud` that appends its arguments to `marker` and runs `body`, in a launch record. */
async function fakeLauncher(body: string, record: Record<string, unknown> = {}) {
  const { mkdtempSync, writeFileSync, mkdirSync, chmodSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const dir = mkdtempSync(join(tmpdir(), "evolve-hud-launch-"));
  const marker = join(dir, "started");
  const binary = join(dir, "fake-evolve-hud");
  writeFileSync(binary, `#!/bin/sh\necho "$@" >> ${marker}\n${body}\n`);
  chmodSync(binary, 0o755);
  mkdirSync(join(dir, "config", "evolve-hud"), { recursive: true });
  writeFileSync(join(dir, "config", "evolve-hud", "launch.json"), JSON.stringify({ binary, ...record }));
  const env = { XDG_CONFIG_HOME: join(dir, "config"), XDG_STATE_HOME: join(dir, "state"), PATH: "/usr/bin:/bin" };
  return { dir, marker, env };
}

function readStarts(marker: string): number {
  try {
    return readFileSync(marker, "utf8").split("\n").filter(Boolean).length;
  } catch {
    return 0;
  }
}

const until = async (check: () => boolean, ms: number) => {
  for (const end = Date.now() + ms; !check() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 20));
};

test("a started sidecar that exits: the user is told why, from its log, with the fix", async () => {
  const fake = await fakeLauncher(
    'echo "error: no model: the default model \\`qwen\\` is not on disk. Get it with \\`evolve-hud pull qwen\\`"; echo "  caused by: the cache is empty"; exit 1',
  );
  const toasts: any[] = [];
  const logs: string[] = [];
  const client = { tui: { showToast: async (o: any) => toasts.push(o.body) }, app: { log: async () => {} } } as any;
  const hooks = createShim({ url: `http://127.0.0.1:${await deadPort()}`, timeoutMs: TIMEOUT }, { log: (_, m) => logs.push(m), env: fake.env }, client);
  await hooks["experimental.chat.messages.transform"]!({}, { messages: clone(step.messages) as any[] });
  await until(() => toasts.some((t) => /exited/.test(t.message)), 5000);
  const told = toasts.find((t) => /exited/.test(t.message));
  assert.ok(told, JSON.stringify(toasts));
  assert.equal(told.variant, "warning");
  assert.match(told.message, /^The sidecar exited with code 1: no model: the default model `qwen` is not on disk\. Get it with `evolve-hud pull qwen`: the cache is empty \(log: .*serve\.log\)/);
  assert.match(logs.join("\n"), /the sidecar exited with code 1: no model/);
});

test("a sidecar that keeps dying is started again at once, then with a backoff of 1, 2, 4 s", async () => {
  const fake = await fakeLauncher("exit 1");
  const hooks = createShim({ url: `http://127.0.0.1:${await deadPort()}`, timeoutMs: TIMEOUT }, { log: () => {}, env: fake.env });
  const started = Date.now();
  // An agent stepping every 100 ms for 3.5 s.
  while (Date.now() - started < 3500) {
    await hooks["experimental.chat.messages.transform"]!({}, { messages: clone(step.messages) as any[] });
    await new Promise((r) => setTimeout(r, 100));
  }
  // At 0 s, at 1 s (the first wait) and at 3 s (the second, 2 s).
  await until(() => readStarts(fake.marker) >= 3, 1000);
  assert.equal(readStarts(fake.marker), 3);
});

test("a log folder that cannot be made: the sidecar is still started, and the log says why", async () => {
  const fake = await fakeLauncher("exit 0");
  const { writeFileSync } = await import("node:fs");
  const { join } = await import("node:path");
  writeFileSync(join(fake.dir, "state-is-a-file"), "");
  const logs: string[] = [];
  const env = { ...fake.env, XDG_STATE_HOME: join(fake.dir, "state-is-a-file") };
  const hooks = createShim({ url: `http://127.0.0.1:${await deadPort()}`, timeoutMs: TIMEOUT }, { log: (_, m) => logs.push(m), env });
  await hooks["experimental.chat.messages.transform"]!({}, { messages: clone(step.messages) as any[] });
  await until(() => readStarts(fake.marker) >= 1, 5000);
  assert.equal(readStarts(fake.marker), 1);
  assert.match(logs.join("\n"), /cannot open the sidecar's log .*state-is-a-file\/evolve-hud\/serve\.log .*starting it without a log/);
});

test("the port `service install` recorded is where the plugin looks; a corrupt record is named and ignored", async () => {
  const fake = await fakeLauncher("exit 0", { port: 8399 });
  const { loadConfig } = await import("../evolve-hud/config.ts");
  const { readLaunchRecord } = await import("../evolve-hud/launcher.ts");
  const { record, problem } = readLaunchRecord(fake.env);
  assert.equal(problem, undefined);
  assert.equal(loadConfig({}, {}, record.port).config.url, "http://127.0.0.1:8399");
  assert.equal(loadConfig({}, { EVOLVE_HUD_PORT: "9000" }, record.port).config.url, "http://127.0.0.1:9000", "the environment wins");
  const { writeFileSync } = await import("node:fs");
  const { join } = await import("node:path");
  writeFileSync(join(fake.env.XDG_CONFIG_HOME, "evolve-hud", "launch.json"), "{ not json");
  const logs: string[] = [];
  createShim({ autostart: false }, { log: (_, m) => logs.push(m), env: fake.env });
  assert.match(logs.join("\n"), /ignoring the launch record: .*launch\.json is not JSON/);
});

test("a failure told elsewhere (the sidecar client's) is not logged again; each other kind once per place", async () => {
  const logs: string[] = [];
  const guard = new FailOpen((_, m) => logs.push(m), (e) => e instanceof SidecarError);
  const hook = guard.hook("transform", async (e: Error) => {
    throw e;
  });
  await hook(new SidecarError("no sidecar answers", "refused"));
  await hook(new TypeError("one"));
  await hook(new TypeError("two"));
  assert.deepEqual(logs.length, 1);
  assert.match(logs[0], /^evolve-hud: transform failed open \(TypeError: one\)/);
});
