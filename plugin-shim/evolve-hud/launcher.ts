// Starting the sidecar: when none answers on this machine, `evolve-hud
// serve` is started detached. Two OpenCode processes may both start one;
// the sidecar's lock on its port keeps exactly one.

import { spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { Config } from "./config.ts";
import type { Log } from "./log.ts";

/** What `evolve-hud install-shim` recorded: the binary, and the model to serve. */
interface LaunchRecord {
  binary?: string;
  model?: string;
}

/** The user's folder for `kind` (config or state) of evolve-hud, by the XDG rules. */
function userDir(env: NodeJS.ProcessEnv, kind: "config" | "state"): string {
  const [variable, fallback] = kind === "config" ? ["XDG_CONFIG_HOME", ".config"] : ["XDG_STATE_HOME", ".local/state"];
  return join(env[variable] || join(env.HOME || homedir(), fallback), "evolve-hud");
}

/** A launch only once this often, whatever comes. */
const LAUNCH_EVERY_MS = 60_000;

export class Launcher {
  private lastAt = -Infinity;

  constructor(
    private config: Config,
    private log: Log,
    private env: NodeJS.ProcessEnv,
    private now: () => number = Date.now,
  ) {}

  /** The port of a sidecar this machine may start: only a loopback URL. */
  port(): number | undefined {
    if (!URL.canParse(this.config.url)) return undefined;
    const url = new URL(this.config.url);
    if (!["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)) return undefined;
    return Number(url.port || (url.protocol === "https:" ? 443 : 80));
  }

  /** Starts `evolve-hud serve` unless autostart is off, the sidecar is not local, or one was started lately. */
  start(): void {
    const port = this.port();
    if (!this.config.autostart || port === undefined || this.now() - this.lastAt < LAUNCH_EVERY_MS) return;
    this.lastAt = this.now();
    let record: LaunchRecord = {};
    try {
      record = JSON.parse(readFileSync(join(userDir(this.env, "config"), "launch.json"), "utf8"));
    } catch {
      // None recorded: `evolve-hud` on PATH, with its default model.
    }
    const binary = typeof record.binary === "string" && record.binary ? record.binary : "evolve-hud";
    const args = ["serve", "--port", String(port), ...(typeof record.model === "string" && record.model ? ["--model", record.model] : [])];
    const logDir = userDir(this.env, "state");
    const logFile = join(logDir, "serve.log");
    let fd: number | undefined;
    try {
      mkdirSync(logDir, { recursive: true });
      fd = openSync(logFile, "a");
      const child = spawn(binary, args, { detached: true, stdio: ["ignore", fd, fd], env: this.env });
      child.on("error", (e) => this.log("warn", `evolve-hud: could not start the sidecar (${binary}): ${e.message}; start it with \`evolve-hud serve\``));
      child.unref();
      this.log("info", `evolve-hud: no sidecar answered; started \`${binary} ${args.join(" ")}\` (log: ${logFile})`);
    } catch (e) {
      this.log("warn", `evolve-hud: could not start the sidecar: ${(e as Error)?.message ?? e}`);
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }
}
