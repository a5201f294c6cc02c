// Telling the user through OpenCode's UI what they need to know of the
// HUD, and no more: a state they must act on (another program on the port,
// a model not on disk, a start that failed, a sidecar stopped), or one that
// lasts. A normal first start (nothing answers, the plugin starts the
// sidecar, it answers) is one notice; the HUD's return is told only after
// the user saw it go.

import type { PluginInput } from "@opencode-ai/plugin";
import type { Config } from "./config.ts";
import type { Launcher } from "./launcher.ts";
import type { Log } from "./log.ts";
import type { Sidecar, SidecarError } from "./sidecar.ts";

type Client = PluginInput["client"];
export type Variant = "info" | "success" | "warning";
export type Toast = (message: string, variant: Variant) => void;

/** How long the HUD may be off while the plugin starts the sidecar before the user is told. */
export const QUIET_MS = 10_000;

/** What the user has been told, so that each thing is told once, and "back" only after "off". */
export class Notices {
  /** Notices shown in this process: each once. */
  private told = new Set<string>();
  /** The notices of the HUD being off that the user saw since it was last on: each once; they, and only they, are followed by "back". */
  private offTold = new Set<string>();
  /** Since when calls fail (the first failure since the last answer): an outage the plugin mends is told only past QUIET_MS. */
  private failingSince?: number;
  /** Whether a sidecar answered in this process: until one has, a start is the first start. */
  private heard = false;

  constructor(
    private toast: Toast | undefined,
    private now: () => number = Date.now,
  ) {}

  /** A notice shown once in this process. */
  once(message: string, variant: Variant): void {
    if (this.told.has(message)) return;
    this.told.add(message);
    this.toast?.(message, variant);
  }

  /** The HUD is off, for a reason the user must know: shown once while it stays off. */
  off(message: string, variant: Variant = "warning"): void {
    if (this.offTold.has(message)) return;
    this.offTold.add(message);
    this.toast?.(message, variant);
  }

  /** A call failed. */
  failed(): void {
    this.failingSince ??= this.now();
  }

  /** How long calls have failed, once past QUIET_MS with nothing told of it; else undefined. */
  offTooLong(): number | undefined {
    if (this.failingSince === undefined || this.offTold.size > 0) return undefined;
    const ms = this.now() - this.failingSince;
    return ms >= QUIET_MS ? ms : undefined;
  }

  /** The plugin started a sidecar: told on the first start only (a restart is quiet unless it fails or lasts). */
  starting(): void {
    if (!this.heard) this.once("Starting the sidecar (evolve-hud serve)…", "info");
  }

  /** A sidecar answered. */
  answered(): void {
    this.heard = true;
    this.failingSince = undefined;
  }

  /** The HUD is on: "back" is told only where the user saw it go. */
  on(): void {
    this.answered();
    if (this.offTold.size === 0) return;
    this.offTold.clear();
    this.toast?.("The sidecar answers again: the agent gets the HUD.", "success");
  }
}

/**
 * Wires the notices to the sidecar client (its circuit, each failure, its
 * health) and to the launcher; `toast` undefined shows nothing (the log
 * lines are written anyway).
 */
export function tellTheUser(
  config: Config,
  sidecar: Sidecar,
  launcher: Launcher,
  log: Log,
  toast: Toast | undefined,
  now: () => number = Date.now,
): Notices {
  const notices = new Notices(toast, now);
  const autostarts = () => config.autostart && launcher.port() !== undefined;
  sidecar.breaker.onChange = (on, error) => {
    if (on) return notices.on();
    if (!error || error.kind === "foreign") return; // told at each failure, below
    // Nothing listens, and the plugin starts a sidecar: quiet, unless that fails or lasts (below).
    if (error.kind === "refused" && autostarts()) return;
    const what = error.kind === "refused" ? "Start it with `evolve-hud serve`." : "`evolve-hud doctor` tells more.";
    notices.off(`No HUD for the agent: ${error.message}. ${what}`);
  };
  sidecar.onFailed = (error: SidecarError) => {
    notices.failed();
    if (error.kind === "foreign") return notices.off(`No HUD for the agent: ${error.message}.`);
    if (error.kind !== "refused" || !autostarts()) return;
    const ms = notices.offTooLong();
    if (ms === undefined) return;
    notices.off(
      `No HUD for the agent for ${Math.round(ms / 1000)} s: ${error.message}, and the sidecar the plugin starts does not answer. ` +
        `Its log: ${launcher.logFile()}; \`evolve-hud doctor\` tells more.`,
    );
  };
  // A sidecar serving the facts without a model says what is missing, and the command that gets it.
  const missingTold = new Set<string>();
  sidecar.onHealth = (health) => {
    const missing = health.missing;
    if (typeof missing !== "string" || !missing) {
      // The model came (pulled, or the record changed): told where its absence was.
      if (missingTold.size > 0) {
        missingTold.clear();
        log("info", "evolve-hud: the model is on disk now; the sidecar serves it");
        notices.once("The model is on disk now: the sidecar serves it, and the HUD gets its findings.", "success");
      }
      return;
    }
    if (missingTold.has(missing)) return;
    missingTold.add(missing);
    const fix = typeof health.fix === "string" && health.fix.trim() ? health.fix.trim() : undefined;
    log("warn", `evolve-hud: the sidecar serves the HUD's facts without a model: ${missing}${fix ? `; fix: ${fix}` : ""}`);
    notices.once(`The HUD runs on facts alone: ${missing}. ${fixText(fix)}`, "warning");
  };
  launcher.onNotice = (message, variant, off) => (off ? notices.off(message, variant) : notices.once(message, variant));
  return notices;
}

/** The fix `/health` names, as the notice gives it: the command quoted, a note after it (`cmd   (note)`) left out of the quote. */
export function fixText(fix: string | undefined): string {
  if (!fix) return "`evolve-hud doctor` tells more.";
  const [command, ...note] = fix.split(/\s{2,}/);
  // `evolve-hud pull`, by name or by the sidecar's path (`/…/bin/evolve-hud pull`, quoted where it has spaces).
  const after = /^('?)(?:[^']*\/)?evolve-hud\1 pull /.test(command) ? "; the sidecar takes the model up by itself once it is on disk" : "";
  return `For the model's findings: \`${command}\`${note.length ? ` ${note.join(" ")}` : ""}${after}.`;
}

/** A toast through OpenCode's UI, or undefined without a client; a client without a TUI (`opencode run`) just ignores it. */
export function toastVia(client: Client | undefined): Toast | undefined {
  if (!client) return undefined;
  return (message, variant) => {
    try {
      const shown = (client as { tui?: { showToast?: (request: unknown) => unknown } } | undefined)?.tui?.showToast?.({ body: { title: "evolve-hud", message, variant, duration: 8000 } });
      (shown as Promise<unknown> | undefined)?.catch?.(() => {});
    } catch {
      // No UI to tell: the log line says it.
    }
  };
}
