// The real parts for end-to-end tests: the evolve-hud sidecar with the real
// test model, and the real OpenCode (npm opencode-ai@1.18.33) run offline
// against a scripted fake main model, with this plugin loaded from
// opencode.json. Each test file gets its own scratch folder.

import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { FakeModel, type Scenario } from "./fake-model.ts";
import { clone, deadPort, repoRoot, TEST_SECRET } from "./helpers.ts";

const shimPath = join(repoRoot, "plugin-shim/evolve-hud.ts");
export const opencode = process.env.OPENCODE_BIN ?? join(repoRoot, "plugin-shim/node_modules/opencode-linux-x64/bin/opencode");
export const sidecarBin = process.env.EVOLVE_HUD_BIN ?? join(repoRoot, "target/release/evolve-hud");
export const testModel =
  process.env.EVOLVE_HUD_TEST_MODEL ??
  join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "evolve-hud/SmolLM2-135M-Instruct.Q4_1.gguf");

export const base = mkdtempSync(join(tmpdir(), "evolve-hud-e2e-"));
export const project = join(base, "project");

/** Writes {@link TEST_SECRET} as the user's secret in a config folder, as the sidecar makes it: 0600 in a 0700 folder. */
export function writeSecret(configHome: string): string {
  const dir = join(configHome, "evolve-hud");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const path = join(dir, "token");
  writeFileSync(path, TEST_SECRET + "\n", { mode: 0o600 });
  return path;
}

/** The config folder of the sidecars the tests start: its secret is {@link TEST_SECRET}. */
export const sidecarConfigHome = join(base, "sidecar-config");
writeSecret(sidecarConfigHome);

// --- The sidecar ---------------------------------------------------------------

export interface Sidecar {
  url: string;
  child: ChildProcess;
  /** The last 200 lines of its log (stderr), for a failure's message. */
  log(): string;
  stop(): Promise<void>;
}

/** Starts `evolve-hud serve` on `model` (the test model by default, on 2
 * threads) and waits until `/health` is 200. */
export async function startSidecar(port = 0, model = testModel, args = ["--threads", "2"]): Promise<Sidecar> {
  return startServe(["--model", model, "--port", String(port), ...args]);
}

/** Starts `evolve-hud serve --no-model`: the HUD's facts, no model loaded. */
export async function startFactsOnly(args: string[] = []): Promise<Sidecar> {
  return startServe(["--no-model", "--port", "0", ...args]);
}

/** Starts `evolve-hud serve` with `args` and waits until `/health` is 200. */
export async function startServe(args: string[]): Promise<Sidecar> {
  const child = spawn(sidecarBin, ["serve", ...args], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, RUST_LOG: "info", XDG_CONFIG_HOME: sidecarConfigHome },
  });
  const lines: string[] = [];
  const url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error("the sidecar did not start within 120 s")), 120_000);
    child.once("exit", (code, signal) => fail(new Error(`the sidecar exited with ${code ?? signal}`)));
    createInterface({ input: child.stderr! }).on("line", (line) => {
      lines.push(line);
      if (lines.length > 200) lines.shift();
      const m = line.match(/listening on (http:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        ok(m[1]);
      }
    });
  });
  for (let i = 0; ; i++) {
    const ready = await fetch(url + "/health").then((r) => r.ok, () => false);
    if (ready) break;
    if (i >= 600) throw new Error(`the sidecar at ${url} was not ready within 60 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    child,
    log: () => lines.join("\n"),
    // A process that already ended (by exit or by a signal such as SIGKILL,
    // which sets `signalCode` and leaves `exitCode` null) fires no more
    // `exit` events: waiting for one would hang.
    stop: () =>
      new Promise<void>((ok) => {
        if (child.exitCode !== null || child.signalCode !== null) return ok();
        child.once("exit", () => ok());
        child.kill("SIGTERM");
      }),
  };
}

// --- OpenCode --------------------------------------------------------------------

/** A fresh home's XDG folders for a hermetic OpenCode, created, with the
 * global and `project`'s config folders marked installed. */
export function freshHome(home: string, project: string): Record<string, string> {
  const xdg = {
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_DATA_HOME: join(home, ".local/share"),
    XDG_CACHE_HOME: join(home, ".cache"),
    XDG_STATE_HOME: join(home, ".local/state"),
  };
  for (const dir of Object.values(xdg)) mkdirSync(dir, { recursive: true });
  // The user's secret, shared with the sidecars the tests start.
  writeSecret(xdg.XDG_CONFIG_HOME);
  seed(join(xdg.XDG_CONFIG_HOME, "opencode"));
  seed(join(project, ".opencode"));
  return xdg;
}

/** The environment of a hermetic, offline OpenCode run in `home`. */
export function opencodeEnv(home: string, xdg: Record<string, string>, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    ...xdg,
    OPENCODE_DISABLE_MODELS_FETCH: "1",
    OPENCODE_DISABLE_AUTOUPDATE: "1",
    npm_config_offline: "true",
    // Tests start their own sidecars; the autostart test turns it on.
    EVOLVE_HUD_AUTOSTART: "off",
    ...extra,
  };
}

/** Marks a config directory as installed, so OpenCode skips its npm install. */
function seed(dir: string) {
  mkdirSync(join(dir, "node_modules"), { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ dependencies: { "@opencode-ai/plugin": "*" } }));
  writeFileSync(
    join(dir, "package-lock.json"),
    JSON.stringify({ lockfileVersion: 3, packages: { "": { dependencies: { "@opencode-ai/plugin": "*" } } } }),
  );
}

/**
 * Makes the plugin `install-shim` wrote into `pluginsDir` the working
 * tree's: the binary embeds the plugin it was built with, which is the same
 * in a clean build but may be older while the plugin is being worked on.
 * Says so when it was not the same.
 */
export function refreshInstalled(pluginsDir: string): void {
  const source = join(repoRoot, "plugin-shim");
  const files = ["evolve-hud.ts", ...readdirSync(join(source, "evolve-hud")).filter((f) => f.endsWith(".ts")).map((f) => join("evolve-hud", f))];
  const stale = files.filter((f) => {
    const want = readFileSync(join(source, f), "utf8");
    const target = join(pluginsDir, f);
    let have: string | undefined;
    try {
      have = readFileSync(target, "utf8");
    } catch {
      // Not installed: written below.
    }
    if (have === want) return false;
    writeFileSync(target, want);
    return true;
  });
  if (stale.length > 0) console.log(`${sidecarBin} installed an older plugin than the working tree's (${stale.join(", ")}): replaced with the working tree's`);
}

export interface RunResult {
  code: number | null;
  seconds: number;
  output: string;
  main: any[];
  summary: any[];
}

export interface RunOptions {
  /** Load the shim from opencode.json with these options. */
  plugin?: Record<string, unknown>;
  /** The plugin's file to load (default: the working tree's `evolve-hud.ts`). */
  pluginFile?: string;
  /** Install the shim with `evolve-hud install-shim` instead. */
  installShim?: boolean;
  env?: Record<string, string>;
  scenario?: Scenario;
  /** The main model's context and output limits. */
  limit?: { context: number; output: number };
  /** Use the sidecar at this URL as OpenCode's `small_model` (session
   * titles), and with `main` as the main model too (text only). */
  evolve?: { url: string; main?: boolean };
}

export interface Prepared {
  model: FakeModel;
  env: Record<string, string>;
}

/** A fresh project and home with opencode.json pointing at a new fake model. */
export async function prepare({
  plugin,
  pluginFile = shimPath,
  installShim,
  env: extraEnv = {},
  scenario = { script: [] },
  limit = { context: 32000, output: 4096 },
  evolve,
}: RunOptions): Promise<Prepared> {
  const model = await FakeModel.start(scenario);
  const home = join(base, "home");
  for (const dir of [project, home]) rmSync(dir, { recursive: true, force: true });
  mkdirSync(project, { recursive: true });
  const xdg = freshHome(home, project);
  if (installShim) {
    // Into the run's own home: the launch record goes to its config folder.
    const installed = spawnSync(sidecarBin, ["install-shim", "--project", project, "--model", testModel], {
      encoding: "utf8",
      env: { ...process.env, HOME: home, ...xdg },
    });
    assert.equal(installed.status, 0, installed.stderr);
    assert.match(installed.stdout, /^installed /);
    refreshInstalled(join(project, ".opencode", "plugins"));
  }
  const config = {
    $schema: "https://opencode.ai/config.json",
    model: evolve?.main ? "evolve/local" : "fake/fake-model",
    small_model: evolve ? "evolve/local" : "fake/fake-model",
    autoupdate: false,
    share: "disabled",
    lsp: false,
    formatter: false,
    permission: { external_directory: "allow" },
    provider: {
      fake: {
        npm: "@ai-sdk/openai-compatible",
        name: "Fake",
        options: { baseURL: model.url, apiKey: "dummy" },
        models: { "fake-model": { name: "Fake", tool_call: true, limit } },
      },
      ...(evolve && {
        evolve: {
          npm: "@ai-sdk/openai-compatible",
          name: "evolve-hud",
          // The documented way to give OpenCode the secret: its file.
          options: { baseURL: evolve.url + "/v1", apiKey: `{file:${join(xdg.XDG_CONFIG_HOME, "evolve-hud/token")}}` },
          models: { local: { name: "evolve-hud local model", tool_call: false, limit: { context: 4096, output: 512 } } },
        },
      }),
    },
    plugin: plugin ? [[pathToFileURL(pluginFile).href, plugin]] : [],
  };
  writeFileSync(join(project, "opencode.json"), JSON.stringify(config, null, 2));
  return { model, env: opencodeEnv(home, xdg, extraEnv) };
}

/** One `opencode run` in a prepared project, killed after `timeoutMs`. */
export async function opencodeRun(
  { env }: Prepared,
  { args = [], prompt = "Do the task.", timeoutMs = 180_000 }: { args?: string[]; prompt?: string; timeoutMs?: number } = {},
): Promise<{ code: number | null; seconds: number; output: string }> {
  const started = performance.now();
  const child = spawn(opencode, ["run", ...args], { cwd: project, env, stdio: ["pipe", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  child.stdin.end(prompt + "\n");
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const code = await new Promise<number | null>((ok) => child.once("exit", ok));
  clearTimeout(timer);
  return { code, seconds: (performance.now() - started) / 1000, output };
}

/** The session a `opencode run --format json` printed, as `opencode export`
 * writes it: `{ info, messages }`, with the project's path written as
 * `projectAs`. */
export function exportSession({ env }: Prepared, output: string, projectAs = project): any {
  const id = output.match(/"sessionID":"(ses_[A-Za-z0-9]+)"/)?.[1];
  if (!id) throw new Error(`no session id in the run's output\n${output.slice(-2000)}`);
  return JSON.parse(JSON.stringify(exportById(env, project, id)).split(project).join(projectAs));
}

/**
 * Session `id` as `opencode export` writes it, run in `cwd`. Into a file:
 * through a pipe, OpenCode exits before a long export is all written.
 */
export function exportById(env: Record<string, string>, cwd: string, id: string): any {
  const dir = mkdtempSync(join(tmpdir(), "evolve-hud-export-"));
  try {
    const file = join(dir, "session.json");
    const fd = openSync(file, "w");
    const exported = spawnSync(opencode, ["export", id], { cwd, env, encoding: "utf8", stdio: ["ignore", fd, "pipe"] });
    closeSync(fd);
    if (exported.status !== 0) throw new Error(`opencode export failed\n${exported.stderr}`);
    const text = readFileSync(file, "utf8");
    return JSON.parse(text.slice(text.indexOf("{")));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface OpencodeServer {
  /** `http://127.0.0.1:PORT`. */
  api: string;
  /** What it printed so far. */
  output(): string;
  stop(): void;
}

/** `opencode serve` in a prepared project, once it says it listens. */
export async function opencodeServe({ env }: Prepared): Promise<OpencodeServer> {
  const port = await deadPort();
  // EVOLVE_HUD_TEST_OPENCODE_LOGS=1: OpenCode's own debug log goes into
  // `output()`, so a failure's message shows what OpenCode did.
  const logs = process.env.EVOLVE_HUD_TEST_OPENCODE_LOGS ? ["--print-logs", "--log-level", "DEBUG"] : [];
  const server = spawn(opencode, ["serve", "--port", String(port), "--hostname", "127.0.0.1", ...logs], {
    cwd: project,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  server.stderr.on("data", (d) => (output += d));
  const stop = () => server.kill("SIGKILL");
  await new Promise<void>((ok, fail) => {
    const timer = setTimeout(() => {
      stop();
      fail(new Error(`opencode serve did not start: ${output}`));
    }, 60_000);
    createInterface({ input: server.stdout! }).on("line", (line) => {
      output += line + "\n";
      if (line.includes("opencode server listening")) {
        clearTimeout(timer);
        ok();
      }
    });
  });
  return { api: `http://127.0.0.1:${port}`, output: () => output, stop };
}

/** A toast OpenCode's UI was asked to show (`tui.toast.show` on its event stream), and when. */
export interface Toast {
  title?: string;
  message: string;
  variant?: string;
  at: number;
}

/**
 * Records the toasts an `opencode serve` is asked to show, from its event
 * stream (`GET /event`): what its terminal UI would show the user.
 */
export function recordToasts(server: OpencodeServer): { toasts: Toast[]; stop(): void } {
  const toasts: Toast[] = [];
  const abort = new AbortController();
  void (async () => {
    const response = await fetch(server.api + "/event", { signal: abort.signal });
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
        const data = buffer.slice(0, end).split("\n").find((l) => l.startsWith("data: "));
        buffer = buffer.slice(end + 2);
        const event = data ? JSON.parse(data.slice(6)) : undefined;
        if (event?.type === "tui.toast.show") toasts.push({ ...event.properties, at: Date.now() });
      }
    }
  })().catch(() => {});
  return { toasts, stop: () => abort.abort() };
}

/** Sends `text` to a new session of an `opencode serve` and waits for the turn to end; the session's id. */
export async function promptServer(server: OpencodeServer, text = "Do the task."): Promise<string> {
  const json = { "content-type": "application/json" };
  const session = await (await fetch(`${server.api}/session`, { method: "POST", headers: json, body: "{}" })).json();
  const reply = await fetch(`${server.api}/session/${session.id}/message`, {
    method: "POST",
    headers: json,
    body: JSON.stringify({ model: { providerID: "fake", modelID: "fake-model" }, parts: [{ type: "text", text }] }),
  });
  assert.equal(reply.status, 200, server.output());
  await reply.text();
  return session.id;
}

/** A fresh project, one `opencode run` in it, and what the fake model was asked. */
export async function runOpencode(options: RunOptions = {}): Promise<RunResult> {
  const prepared = await prepare(options);
  const run = await opencodeRun(prepared);
  await prepared.model.stop();
  return { ...run, main: prepared.model.main(), summary: prepared.model.of("summary") };
}

/** OpenCode's own log, line by line. */
export function opencodeLog(prepared: Prepared): string[] {
  const dir = join(prepared.env.XDG_DATA_HOME, "opencode", "log");
  return readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), "utf8").split("\n"));
}

/** What the plugin wrote to OpenCode's log, line by line. */
export function pluginSaid(prepared: Prepared): string[] {
  return opencodeLog(prepared).filter((l) => l.includes("evolve-hud:"));
}

// --- Reading the requests ----------------------------------------------------------

export function textOf(message: any): string {
  if (typeof message?.content === "string") return message.content;
  if (Array.isArray(message?.content)) return message.content.map((p: any) => p?.text ?? "").join("");
  return "";
}

export const isHudMessage = (m: any) => m?.role === "user" && textOf(m).includes("<evolve-hud");

/** The request as it would be without the HUD. */
export function withoutHud(body: any): any {
  const copy = withoutRecoverTool(body);
  copy.messages = copy.messages.filter((m: any) => !isHudMessage(m));
  return copy;
}

/**
 * A request body without the plugin's recover tool, which is in every
 * request while masking is on (the default); it must be there exactly once.
 */
export function withoutRecoverTool(body: any): any {
  const copy = clone(body);
  const ours = (t: any) => (t.function?.name ?? t.name) === "evolve_output";
  assert.equal(copy.tools.filter(ours).length, 1, "the recover tool is in the request once");
  copy.tools = copy.tools.filter((t: any) => !ours(t));
  return copy;
}

/** `steps` bash calls, the main model thinking `thinkMs` before each answer (after `before`, if given). */
export function thinking(steps: number, thinkMs: number, before?: (step: number) => Promise<void> | void): Scenario {
  return {
    script: Array.from({ length: steps }, (_, i) => ({ tool: "bash", args: { command: `echo step ${i}`, description: "run" } })),
    beforeMain: async (step) => {
      await before?.(step);
      await new Promise((ok) => setTimeout(ok, thinkMs));
    },
  };
}

/** Whether a request the fake model got carries a HUD. */
export const hasHud = (request: any) => JSON.stringify(request.body.messages).includes("<evolve-hud");

/** The pids of the `evolve-hud serve --port PORT` processes running. */
export function serving(port: number): string[] {
  return spawnSync("pgrep", ["-f", `evolve-hud serve --port ${port}`], { encoding: "utf8" }).stdout.split("\n").filter(Boolean);
}
