// Telling the user through OpenCode's UI when the HUD goes off, and back on.

import type { PluginInput } from "@opencode-ai/plugin";
import type { Config } from "./config.ts";
import type { Launcher } from "./launcher.ts";
import type { Sidecar } from "./sidecar.ts";

type Client = PluginInput["client"];

/** Toasts each change of the sidecar's circuit (why the HUD is off and what to do, or that it is back) and what became of a start. */
export function notifyOnChange(config: Config, sidecar: Sidecar, launcher: Launcher, client: Client): void {
  sidecar.breaker.onChange = (on, error) => {
    const local = launcher.port() !== undefined;
    const what =
      error?.kind !== "refused"
        ? "`evolve-hud doctor` tells more."
        : config.autostart && local
          ? "Starting the sidecar (evolve-hud serve)…"
          : "Start it with `evolve-hud serve`.";
    const message = on ? "The sidecar answers again: the agent gets the HUD." : `No HUD for the agent: ${error?.message}. ${what}`;
    toast(client, message, on ? "success" : "warning");
  };
  launcher.onNotice = (message, variant) => toast(client, message, variant);
}

/** Shows `message` in OpenCode's UI; a client without a TUI (`opencode run`) just ignores it. */
function toast(client: Client, message: string, variant: "info" | "success" | "warning"): void {
  try {
    const shown = (client as any)?.tui?.showToast?.({ body: { title: "evolve-hud", message, variant, duration: 8000 } });
    (shown as Promise<unknown> | undefined)?.catch?.(() => {});
  } catch {
    // No UI to tell: the log line says it.
  }
}
