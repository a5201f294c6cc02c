// Starting the sidecar: when none answers on this machine, `evolve-hud
// serve --facts-without-model` is started detached (without a model on
// disk it serves the HUD's facts, and says what is missing in `/health`).
// Two OpenCode processes may both start one; the sidecar's lock on its
// port keeps exactly one. A sidecar that dies is started again on the next
// refused call, with a backoff from 1 s up to a minute while starts keep
// failing. None is started while `evolve-hud stop` has left its marker
// since this plugin started. What becomes of a start (a model loading for
// long, an exit with its reason, no answer in time) is told through
// `onNotice`. The program is the platform package's sidecar where the
// plugin came from npm with one (only where npm puts it: `packagedBinary`),
// else the binary `evolve-hud install-shim` recorded, else `evolve-hud` on
// PATH; never a name looked up elsewhere (no `npx`). Only what is the
// user's alone is used: the launch record, the state folder, its log and
// the stop marker, and the binary run (see `private.ts`).

import { spawn } from "node:child_process";
import { closeSync, fstatSync, lstatSync, openSync, readFileSync, readSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { dialTarget, isLocalSidecarHost } from "./address.ts";
import type { Config } from "./config.ts";
import { isObject } from "./hud.ts";
import type { Log } from "./log.ts";
import { openPrivateLog, ownFolder, readOwnedFile, trustedBinary, userDir } from "./private.ts";

/** What `evolve-hud install-shim` and `service install` recorded: the binary, the model to serve, the port. */
export interface LaunchRecord {
  binary?: string;
  model?: string;
  port?: number;
}

/**
 * The recorded launch, its unusable fields dropped; `problem` says why a
 * record could not be read. It names the program the plugin runs, so one
 * that is not the user's, or that others may write, is not used.
 */
export function readLaunchRecord(env: NodeJS.ProcessEnv): { record: LaunchRecord; problem?: string } {
  const path = join(userDir(env, "config"), "launch.json");
  const read = readOwnedFile(path);
  // None recorded: `evolve-hud` on PATH, with its default model.
  if ("missing" in read) return { record: {} };
  if ("problem" in read) return { record: {}, problem: `${read.problem}; it is not used` };
  const text = read.text;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    return { record: {}, problem: `${path} is not JSON (${(e as Error).message}); run \`evolve-hud install-shim\` again` };
  }
  if (!isObject(parsed)) return { record: {}, problem: `${path} is not a JSON object; run \`evolve-hud install-shim\` again` };
  const record: LaunchRecord = {};
  if (typeof parsed.binary === "string" && parsed.binary) record.binary = parsed.binary;
  if (typeof parsed.model === "string" && parsed.model) record.model = parsed.model;
  if (Number.isInteger(parsed.port) && (parsed.port as number) > 0 && (parsed.port as number) < 65536) record.port = parsed.port as number;
  return { record };
}

/** The plugin's npm package (`install-shim --npm` names it in opencode.json: src/install/config.rs). */
export const NPM_NAME = "opencode-evolve-hud";

/** The npm package that holds the sidecar for this OS and CPU (`scripts/npm-pack.sh` makes it). */
export function platformPackage(platform: string = process.platform, arch: string = process.arch): string {
  return `${NPM_NAME}-${platform}-${arch}`;
}

/**
 * The folder of the plugin's own npm package (`NPM_NAME`): the folder of
 * the module `from` (a file URL or path), or the one above it (the entry
 * is at the package's root, its modules in `evolve-hud/`), whichever has a
 * package.json of that name; none for a plugin not in its package (a file
 * copied by `install-shim`).
 */
export function pluginRoot(from: string = import.meta.url): string | undefined {
  const file = from.startsWith("file:") ? fileURLToPath(from) : from;
  for (let dir = dirname(file), up = 0; up < 2; dir = dirname(dir), up++) {
    try {
      const manifest: unknown = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
      if (isObject(manifest) && manifest.name === NPM_NAME) return dir;
    } catch {
      // None there, or not JSON: not the package's root.
    }
  }
  return undefined;
}

/**
 * The sidecar of the platform package `name` installed with this plugin
 * (an optional dependency of the plugin's npm package), if there is one:
 * `bin/evolve-hud` in it, its libraries beside it. Only where npm puts it:
 * in the plugin package's own `node_modules`, or beside the package in the
 * `node_modules` holding it. No folder further up counts: one there
 * (`/tmp/node_modules`) may be another account's. Something there, even a
 * link leading nowhere, is returned for `trustedBinary` to check: one that
 * fails is refused, not passed over for another program.
 */
export function packagedBinary(from: string = import.meta.url, name: string = platformPackage()): string | undefined {
  const root = pluginRoot(from);
  if (root === undefined) return undefined;
  const holder = dirname(root);
  const places = [join(root, "node_modules", name), ...(basename(holder) === "node_modules" ? [join(holder, name)] : [])];
  for (const place of places) {
    const bin = join(place, "bin", "evolve-hud");
    try {
      lstatSync(bin);
      return bin;
    } catch {
      // Not here: the next place.
    }
  }
  return undefined;
}

/** The first wait between starts, and the longest. */
const FIRST_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 60_000;
/** How long a started sidecar may take to answer ready before the user is told. */
const READY_WITHIN_MS = 180_000;
/** How long a model may load before the user is told it still does (a quick load is not worth a notice). */
export const LOADING_QUIET_MS = 10_000;
const POLL_MS = 500;
/** The flag that makes `serve` serve the HUD's facts when its model cannot be had; a sidecar older than it refuses it. */
const FACTS_FLAG = "--facts-without-model";

/** A notice for the user; `off` says the HUD is off until something changes (a later "back" notice may follow it). */
export type Notice = (message: string, variant: "info" | "warning" | "success", off?: boolean) => void;

/** The stop marker's name in the state folder: `evolve-hud stop` writes it, `serve` removes it. */
export function stopMarker(env: NodeJS.ProcessEnv, port: number): string {
  return join(userDir(env, "state"), `stopped-${port}`);
}

export class Launcher {
  private nextAt = -Infinity;
  private backoffMs = FIRST_BACKOFF_MS;
  private watching = false;
  /** The reasons for not starting already told: each is told once. */
  private told = new Set<string>();
  /** Told what became of a start: loading, ready, an exit with its reason, no answer in time. */
  onNotice?: Notice;
  /** Whether `serve` takes FACTS_FLAG (it is dropped once a sidecar refused it). */
  private factsFlag = true;

  constructor(
    private config: Config,
    private log: Log,
    private env: NodeJS.ProcessEnv,
    private now: () => number = Date.now,
    private record: LaunchRecord = readLaunchRecord(env).record,
    /** When this plugin started (ms since the epoch): a stop marker older than that is from before, and ignored. */
    private startedAt: number = Date.now(),
    /** The platform package's sidecar, run before the recorded binary and `evolve-hud` on PATH. */
    private packaged: string | undefined = packagedBinary(),
  ) {}

  /** The sidecar's log, where the launcher appends what it prints. */
  logFile(): string {
    return join(userDir(this.env, "state"), "serve.log");
  }

  /** The port of a sidecar this machine may start: only a loopback URL. */
  port(): number | undefined {
    if (!URL.canParse(this.config.url)) return undefined;
    const url = new URL(this.config.url);
    if (!isLocalSidecarHost(url.hostname)) return undefined;
    return Number(url.port || (url.protocol === "https:" ? 443 : 80));
  }

  /** The sidecar answered: the next start, if one is ever needed, may come at once. */
  answered(): void {
    this.backoffMs = FIRST_BACKOFF_MS;
    this.nextAt = -Infinity;
  }

  /**
   * Starts `evolve-hud serve` unless autostart is off, the sidecar is not
   * local, the user stopped it (`evolve-hud stop`) since this plugin
   * started, or the backoff says wait; whether it started one.
   */
  start(): boolean {
    const port = this.port();
    if (!this.config.autostart || port === undefined || this.now() < this.nextAt) return false;
    if (this.stopped(port)) return false;
    this.nextAt = this.now() + this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
    const binary = this.packaged ?? this.record.binary ?? "evolve-hud";
    const args = [
      "serve",
      "--port",
      String(port),
      ...(this.factsFlag ? [FACTS_FLAG] : []),
      ...(this.record.model ? ["--model", this.record.model] : []),
    ];
    const program = trustedBinary(binary, this.env);
    // The plugin package's own sidecar that cannot be run is told, and nothing else is run in its place.
    const ours = this.packaged === undefined ? "" : `; it is the sidecar of the plugin's npm package (${platformPackage()}), and nothing else is run in its place`;
    if ("missing" in program) return this.packaged === undefined ? this.couldNotStart(binary, program.missing) : this.refuse(`${program.missing}${ours}`);
    if ("refused" in program) return this.refuse(`${program.refused}${ours}`);
    const logDir = userDir(this.env, "state");
    const folder = ownFolder(logDir);
    if ("refused" in folder) return this.refuse(`its state folder is not yours alone: ${folder.refused}`);
    if ("ok" in folder && folder.note) this.log("info", `evolve-hud: ${folder.note}`);
    const logFile = this.logFile();
    let fd: number | undefined;
    let logFrom = 0;
    try {
      if ("failed" in folder) throw new Error(folder.failed);
      fd = openPrivateLog(logFile);
      logFrom = fstatSync(fd).size;
    } catch (e) {
      this.log(
        "warn",
        `evolve-hud: cannot open the sidecar's log ${logFile} (${(e as Error)?.message ?? e}); starting it without a log. ` +
          `Make ${logDir} a folder you can write, or set XDG_STATE_HOME`,
      );
    }
    try {
      // The program checked is the program run; its name stays what it was (`ps`, `evolve-hud stop`).
      const child = spawn(program.path, args, { argv0: binary, detached: true, stdio: ["ignore", fd ?? "ignore", fd ?? "ignore"], env: this.env });
      child.on("error", (e) => this.couldNotStart(binary, e.message));
      child.on("exit", (code, signal) => {
        void this.exited(code, signal, fd === undefined ? undefined : { file: logFile, from: logFrom }).catch(() => {});
      });
      child.unref();
      this.log("info", `evolve-hud: no sidecar answered; started \`${binary} ${args.join(" ")}\` (log: ${fd === undefined ? "none" : logFile})`);
      this.watchStart();
      return true;
    } catch (e) {
      this.log("warn", `evolve-hud: could not start the sidecar: ${(e as Error)?.message ?? e}`);
      return false;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  /**
   * Whether the user stopped the sidecar of `port` with `evolve-hud stop`
   * since this plugin started: its marker (`{"at": ms}`, a file of the
   * user's alone) is newer than the plugin. An older one is from before
   * this OpenCode started, and is ignored. Told once per marker.
   */
  private stopped(port: number): boolean {
    const path = stopMarker(this.env, port);
    const read = readOwnedFile(path);
    if ("missing" in read) return false;
    if ("problem" in read) {
      this.logOnce(`evolve-hud: ignoring the stop marker: ${read.problem}`);
      return false;
    }
    let at: unknown;
    try {
      at = (JSON.parse(read.text) as { at?: unknown })?.at;
    } catch {
      // Not JSON: below.
    }
    if (typeof at !== "number" || !Number.isFinite(at)) {
      this.logOnce(`evolve-hud: ignoring the stop marker ${path}: it is not {"at": <unix ms>}`);
      return false;
    }
    if (at < this.startedAt) return false;
    const key = `stopped ${path} ${at}`;
    if (!this.told.has(key)) {
      this.told.add(key);
      this.log("info", `evolve-hud: not starting the sidecar: it was stopped with \`evolve-hud stop\` (${path}); the HUD is off until the next OpenCode start, or \`evolve-hud serve\``);
      this.onNotice?.("The sidecar was stopped with `evolve-hud stop`; the HUD is off until the next OpenCode start, or `evolve-hud serve`.", "info", true);
    }
    return true;
  }

  /** Logs `message` the first time only. */
  private logOnce(message: string): void {
    if (this.told.has(message)) return;
    this.told.add(message);
    this.log("warn", message);
  }

  /** The sidecar could not be started (no such program): the user is told how to get one. */
  private couldNotStart(binary: string, why: string): false {
    this.logOnce(`evolve-hud: could not start the sidecar (${binary}): ${why}; start it with \`evolve-hud serve\``);
    this.onNotice?.(`Could not start the sidecar (${binary}: ${why}). Install evolve-hud, or run \`evolve-hud install-shim\` again.`, "warning", true);
    return false;
  }

  /** The sidecar is not started, for a reason the user must fix: told once (log and notice), not at every retry. */
  private refuse(why: string): false {
    if (this.told.has(why)) return false;
    this.told.add(why);
    this.log("warn", `evolve-hud: not starting the sidecar: ${why}`);
    this.onNotice?.(`Not starting the sidecar: ${why}. No HUD until it runs.`, "warning", true);
    return false;
  }

  /** A started sidecar ended: unless another answers, tell the user why, from its log (each reason once). */
  private async exited(code: number | null, signal: NodeJS.Signals | null, log?: { file: string; from: number }): Promise<void> {
    if (code === 0) return;
    // Another process's sidecar won the port: nothing is wrong.
    if ((await this.health()).kind !== "down") return;
    const how = signal ? `was ended by ${signal}` : `exited with code ${code}`;
    const why = log ? lastError(log.file, log.from) : undefined;
    if (this.factsFlag && why?.includes(FACTS_FLAG)) {
      // An evolve-hud older than the flag: start it without, at the next try.
      this.factsFlag = false;
      this.answered();
      this.log("info", `evolve-hud: this evolve-hud does not take ${FACTS_FLAG} (${why}); starting it without`);
      return;
    }
    const where = log ? ` (log: ${log.file})` : "";
    this.logOnce(`evolve-hud: the sidecar ${how}${why ? `: ${why}` : ""}${where}`);
    this.onNotice?.(`The sidecar ${how}${why ? `: ${why}` : ""}${where}. No HUD until it runs.`, "warning", true);
  }

  /**
   * Polls `/health` after a start: a model still loading after
   * LOADING_QUIET_MS is told once (and then that it is loaded), a failed
   * one and one not ready in time are told at once.
   */
  private watchStart(): void {
    if (this.watching) return;
    this.watching = true;
    const started = this.now();
    const until = started + READY_WITHIN_MS;
    let loggedLoading = false;
    let toldLoading = false;
    const poll = async (): Promise<void> => {
      const health = await this.health();
      if (health.kind === "ready") {
        if (toldLoading) this.onNotice?.("The sidecar's model is loaded: the HUD has the model's findings now.", "success");
        this.watching = false;
        return;
      }
      if (health.kind === "failed") {
        this.log("warn", `evolve-hud: the sidecar's model failed: ${health.reason}`);
        this.onNotice?.(`The sidecar's model failed: ${health.reason}. The HUD shows facts only; \`evolve-hud doctor\` tells more.`, "warning");
        this.watching = false;
        return;
      }
      if (health.kind === "loading") {
        const share = health.progress === undefined ? "" : ` (${Math.round(health.progress * 100)} %)`;
        if (!loggedLoading) {
          loggedLoading = true;
          this.log("info", `evolve-hud: the sidecar is loading its model${share}; the HUD's facts are on meanwhile`);
        }
        if (!toldLoading && this.now() - started >= LOADING_QUIET_MS) {
          toldLoading = true;
          this.onNotice?.(`The sidecar is still loading its model${share}; the HUD has its facts meanwhile.`, "info");
        }
      }
      if (this.now() >= until) {
        const state = health.kind === "loading" ? "still loading" : "not answering";
        this.log("warn", `evolve-hud: the sidecar is ${state} ${READY_WITHIN_MS / 1000} s after its start`);
        this.onNotice?.(`The sidecar is ${state} ${READY_WITHIN_MS / 1000} s after its start; \`evolve-hud doctor\` tells more.`, "warning", state === "not answering");
        this.watching = false;
        return;
      }
      setTimeout(() => void poll().catch(() => (this.watching = false)), POLL_MS).unref();
    };
    setTimeout(() => void poll().catch(() => (this.watching = false)), POLL_MS).unref();
  }

  /** What `/health` says now. */
  private async health(): Promise<
    { kind: "ready" } | { kind: "loading"; progress?: number } | { kind: "failed"; reason: string } | { kind: "down" }
  > {
    try {
      // The IP address, as every exchange: `localhost` might lead to another account's server.
      const { base } = await dialTarget(this.config.url);
      const response = await fetch(`${base}/health`, { signal: AbortSignal.timeout(1000) });
      const body: unknown = await response.json().catch(() => undefined);
      if (response.ok) return { kind: "ready" };
      if (isObject(body) && body.status === "loading") {
        return { kind: "loading", progress: typeof body.progress === "number" ? body.progress : undefined };
      }
      if (isObject(body) && body.status === "failed" && typeof body.reason === "string") return { kind: "failed", reason: body.reason };
      return { kind: "down" };
    } catch {
      return { kind: "down" };
    }
  }
}

/** The last `error:` of a log written since `from`, with its causes, on one line. */
function lastError(file: string, from: number): string | undefined {
  let text = "";
  try {
    const fd = openSync(file, "r");
    try {
      const size = fstatSync(fd).size;
      const start = Math.max(from, size - 16_384);
      const buffer = Buffer.alloc(size - start);
      readSync(fd, buffer, 0, buffer.length, start);
      text = buffer.toString("utf8");
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
  const lines = text.split("\n");
  let at = lines.length - 1;
  while (at >= 0 && !lines[at].startsWith("error: ")) at--;
  if (at < 0) return undefined;
  const causes = lines.slice(at + 1).filter((l) => l.startsWith("  caused by: ")).map((l) => l.trim().slice("caused by: ".length));
  return [lines[at].slice("error: ".length), ...causes].join(": ").slice(0, 600);
}
