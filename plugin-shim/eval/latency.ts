// How soon the local model's findings reach the agent in real use. The real
// OpenCode 1.18.33 runs scenarios of the HUD quality evaluation with this
// plugin loaded, the real tools (python3, cc/make, cmake/ctest, bash, …) in a
// fresh project, and a real sidecar serving MODEL with a user's defaults. A
// scripted main model thinks THINK seconds before each answer, as a real one
// does. For every question the HUD asks the local model, it prints:
//
// - from the tool's end (OpenCode's own timestamp) to the first HUD that
//   shows the question's verified finding (the sidecar's event stream);
// - whether the agent's next request, sent right after the tool's end, and
//   the one after it carried that finding in its HUD.
//
//   cd plugin-shim && node --import tsx eval/latency.ts [--model FILE] [--think S] [--wait-ms N] [--load N]
//       [--llama-server BIN] [name…]
//
// --model: the sidecar's model (default: Qwen2.5-Coder-0.5B from the cache,
// or EVOLVE_HUD_EVAL_MODEL). --wait-ms: the plugin's waitMs (default: the
// plugin's own). --load N: N busy loops at the same priority beside
// everything, for a loaded machine. --llama-server: also run every scenario
// against a second sidecar whose engine is llama.cpp's llama-server serving
// the same model (default: EVOLVE_HUD_LLAMA_SERVER, when set), alternating
// with the local engine scenario by scenario, so both see the same hour.
// Names pick scenarios (default: all of tests/fixtures/sessions; the ones that
// raise no question add nothing but time).

import { spawn, type ChildProcess } from "node:child_process";
import { homedir } from "node:os";
import { join } from "node:path";
import { DEFAULTS } from "../evolve-hud/config.ts";
import { AUTH, deadPort, quantile } from "../test/helpers.ts";
import { exportSession, opencodeRun, prepare, project, startServe, textOf, isHudMessage } from "../test/opencode.ts";
import { scenarios, toolEnv } from "./sessions.ts";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const value = args[i + 1];
  args.splice(i, 2);
  return value;
};
const model = option(
  "--model",
  process.env.EVOLVE_HUD_EVAL_MODEL ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "evolve-hud/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
);
const think = Number(option("--think", "6"));
const waitMs = Number(option("--wait-ms", String(DEFAULTS.waitMs)));
const load = Number(option("--load", "0"));
const llamaServer = option("--llama-server", process.env.EVOLVE_HUD_LLAMA_SERVER ?? "");
const wanted = args;

/** The quotes of the model's part of a HUD text. */
function quotes(hud: string): string[] {
  const label = "local model found in the output, each line checked there: ";
  return hud
    .split("\n")
    .flatMap((line) => {
      const at = line.indexOf(label);
      return at < 0 ? [] : line.slice(at + label.length).split('"').filter((_, i) => i % 2 === 1);
    });
}

interface HudEvent {
  at: number;
  session: string;
  hud: string;
  state: string;
}

/** Follows the sidecar's `/v1/events`, keeping every `hud` event. */
async function follow(url: string, events: HudEvent[]): Promise<() => void> {
  const abort = new AbortController();
  const res = await fetch(url + "/v1/events", { signal: abort.signal, headers: AUTH });
  if (!res.ok || !res.body) throw new Error(`GET /v1/events: ${res.status}`);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  void (async () => {
    let buffer = "";
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const kind = block.match(/^event: (.*)$/m)?.[1];
          const data = block
            .split("\n")
            .filter((l) => l.startsWith("data: "))
            .map((l) => l.slice(6))
            .join("\n");
          if (kind !== "hud") continue;
          const view = JSON.parse(data);
          events.push({ at: Date.now(), session: view.session_id, hud: view.hud, state: view.model_status?.state ?? "" });
        }
      }
    } catch {
      // aborted at the end
    }
  })();
  return () => abort.abort();
}

async function metric(url: string, name: string, label = ""): Promise<number> {
  const text = await (await fetch(url + "/metrics", { headers: AUTH })).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith(name) && l.includes(label))
    .reduce((sum, l) => sum + Number(l.split(" ").pop()), 0);
}

interface Question {
  engine: string;
  session: string;
  call: string;
  outcome: string;
  /** From the tool's end to the finding first shown, in seconds. */
  shown?: number;
  /** From the question asked to the finding first shown. */
  asked?: number;
  /** From the tool's end to the agent's next request (the plugin's wait). */
  request?: number;
  next: boolean | undefined;
  after: boolean | undefined;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
// Nothing the run starts outlives it, however it ends.
const children: ChildProcess[] = [];
process.on("exit", () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});
process.on("SIGINT", () => process.exit(130));
for (let i = 0; i < load; i++) children.push(spawn("sh", ["-c", "while :; do :; done"], { stdio: "ignore" }));

/** llama.cpp's llama-server serving `model` on 2 threads, two slots of 4096 tokens as the sidecar keeps them. */
async function startLlamaServer(): Promise<string> {
  const port = await deadPort();
  const child = spawn(llamaServer, ["-m", model, "--host", "127.0.0.1", "--port", String(port), "-t", "2", "-c", "8192", "-np", "2"], {
    stdio: "ignore",
  });
  children.push(child);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; !(await fetch(url + "/health").then((r) => r.ok, () => false)); i++) {
    if (i > 1200) throw new Error("llama-server was not ready within 120 s");
    await sleep(100);
  }
  return url + "/v1";
}

interface Engine {
  name: string;
  url: string;
  events: HudEvent[];
}

const engines: Engine[] = [];
const stops: (() => Promise<void>)[] = [];
const configs = [{ name: "local", args: ["--model", model] }];
if (llamaServer) configs.push({ name: "llama-server", args: ["--engine", await startLlamaServer()] });
for (const { name, args: engineArgs } of configs) {
  const sidecar = await startServe([...engineArgs, "--port", "0"]);
  children.push(sidecar.child);
  const events: HudEvent[] = [];
  const unfollow = await follow(sidecar.url, events);
  stops.push(async () => {
    unfollow();
    await sidecar.stop();
  });
  // The sidecar decodes the start its questions share as it starts; a
  // running sidecar has done so long before a session's failure.
  for (let i = 0; (await metric(sidecar.url, "evolve_hud_prompt_seconds_count", 'work="warmup"')) === 0; i++) {
    if (i > 600) throw new Error(`the ${name} sidecar did not warm up within 60 s`);
    await sleep(100);
  }
  engines.push({ name, url: sidecar.url, events });
}

const questions: Question[] = [];
const started = Date.now();
for (const scenario of scenarios) {
  if (wanted.length > 0 && !wanted.includes(scenario.name)) continue;
  for (const engine of engines) await runScenario(scenario, engine);
}

/** Runs `scenario` in the real OpenCode against `engine`'s sidecar and times each question it raises. */
async function runScenario(scenario: (typeof scenarios)[number], engine: Engine): Promise<void> {
  const { events } = engine;
  const script = scenario.steps(project);
  const prepared = await prepare({
    plugin: { url: engine.url, waitMs, autostart: false, notify: false },
    scenario: { script, bigUsageAt: scenario.compactAt, beforeMain: () => sleep(think * 1000) },
    limit: scenario.compactAt === undefined ? undefined : { context: 8000, output: 1000 },
    env: toolEnv,
  });
  const run = await opencodeRun(prepared, { args: ["--format", "json"], prompt: scenario.goal, timeoutMs: 900_000 });
  await prepared.model.stop();
  if (run.code !== 0) throw new Error(`${scenario.name}: opencode run failed (${run.code})\n${run.output.slice(-2000)}`);
  const session = exportSession(prepared, run.output);
  const id: string = session.info.id;
  // The agent may end before the last question is answered.
  const last = () => events.filter((e) => e.session === id).pop()?.state;
  for (let i = 0; last() === "pending" && i < 600; i++) await sleep(100);
  const tools = session.messages.flatMap((m: any) => m.parts.filter((p: any) => p.type === "tool"));
  const main = prepared.model.main();
  const sent = prepared.model.requests.filter((r) => r.kind === "main").map((r) => r.at);
  // The HUD each main request carried (request k follows tool k - 1).
  const carried = main.map((body: any) => quotes(textOf(body.messages.filter(isHudMessage).pop())));
  const mine = events.filter((e) => e.session === id);
  let asked = 0;
  for (const [i, e] of mine.entries()) {
    if (e.state !== "pending" || mine[i - 1]?.state === "pending") continue;
    asked++;
    const before = new Set(i > 0 ? quotes(mine[i - 1].hud) : []);
    // Up to the event where the question settles: a quote shown after that
    // is a later question's.
    const end = mine.findIndex((r, k) => k > i && r.state !== "pending");
    const rest = mine.slice(i, end < 0 ? undefined : end + 1);
    const settled = rest.find((r) => r.state !== "pending");
    const shownAt = rest.find((r) => quotes(r.hud).some((q) => !before.has(q)));
    const found = shownAt ? quotes(shownAt.hud).filter((q) => !before.has(q)) : [];
    // The question is about the last call that had started when it was
    // asked (OpenCode stamps a call's end after the plugin has seen it).
    const step = tools.filter((t: any) => (t.state.time?.start ?? Infinity) <= e.at).length - 1;
    const tool = tools[step];
    const has = (k: number) => (carried[k] === undefined ? undefined : found.some((q) => carried[k].includes(q)));
    const command = String(tool?.state.input?.command ?? tool?.tool ?? "?");
    questions.push({
      engine: engine.name,
      session: scenario.name,
      call: `${step + 1}: ${command.length > 48 ? command.slice(0, 47) + "…" : command}`,
      outcome: shownAt ? "shown" : settled?.state === "ready" ? "ready, its lines already shown" : (settled?.state ?? "pending"),
      shown: shownAt && tool ? (shownAt.at - tool.state.time.end) / 1000 : undefined,
      asked: shownAt ? (shownAt.at - e.at) / 1000 : undefined,
      request: tool && sent[step + 1] !== undefined ? (sent[step + 1] - tool.state.time.end) / 1000 : undefined,
      next: shownAt ? has(step + 1) : undefined,
      after: shownAt ? has(step + 2) : undefined,
    });
  }
  console.error(`${scenario.name} (${engine.name}): ${tools.length} calls, ${main.length} main requests, ${asked} questions (${run.seconds.toFixed(0)} s)`);
}

const summaries: string[] = [];
for (const engine of engines) {
  const notTaken = await metric(engine.url, "evolve_hud_hud_questions_not_taken_total");
  // The machine's load as the model saw it: how often it changed its
  // decoding threads, and how many it ended with.
  const threadChanges = await metric(engine.url, "evolve_hud_decode_thread_changes_total");
  const threads = await metric(engine.url, "evolve_hud_decode_threads");
  const mine = questions.filter((q) => q.engine === engine.name);
  const shown = mine.filter((q) => q.shown !== undefined);
  const count = (pick: (q: Question) => boolean | undefined) => mine.filter((q) => pick(q) === true).length;
  const withAfter = mine.filter((q) => q.after !== undefined).length;
  const held = shown.filter((q) => q.request !== undefined).map((q) => q.request!);
  summaries.push(
    `${engine.name}: ${mine.length} questions, ${shown.length} findings shown; tool end → shown p50 ${secs(quantile(shown.map((q) => q.shown!), 0.5))}, ` +
      `p90 ${secs(quantile(shown.map((q) => q.shown!), 0.9))}; in the next request ${count((q) => q.next)}/${shown.length}, ` +
      `in the one after ${count((q) => q.after)}/${withAfter}; tool end → next request p50 ${secs(quantile(held, 0.5))}, max ${secs(quantile(held, 1))}; ` +
      `questions not taken (asked again) ${notTaken}; decoding thread changes ${threadChanges}, threads at the end ${threads}`,
  );
}
for (const stop of stops) await stop();

function yes(v: boolean | undefined): string {
  return v === undefined ? "–" : v ? "yes" : "no";
}
function secs(v: number | undefined): string {
  return v === undefined ? "–" : `${v.toFixed(2)} s`;
}
console.log(
  `\n${new Date().toISOString().slice(0, 10)}; model ${model.split("/").pop()}; engines ${engines.map((e) => e.name).join(", ")}; main model thinks ${think} s; waitMs ${waitMs}; ${load} busy loops beside; ${((Date.now() - started) / 60000).toFixed(1)} min\n`,
);
console.log("| engine | session | call | outcome | tool end → shown | asked → shown | tool end → next request | in the next request | in the one after |");
console.log("|---|---|---|---|---:|---:|---:|---|---|");
for (const q of questions) {
  console.log(
    `| ${q.engine} | ${q.session} | \`${q.call.replaceAll("|", "\\|")}\` | ${q.outcome} | ${secs(q.shown)} | ${secs(q.asked)} | ${secs(q.request)} | ${yes(q.next)} | ${yes(q.after)} |`,
  );
}
console.log("\n" + summaries.join("\n"));
// The children (llama-server, busy loops) would keep the process alive.
process.exit(0);
