// Logging through OpenCode, and the fail-open guard every hook runs in.

import type { PluginInput } from "@opencode-ai/plugin";

export type Log = (level: "info" | "warn" | "error", message: string) => void;

/** Logs through OpenCode's log service; never throws, never waits. */
export function appLog(client?: PluginInput["client"]): Log {
  return (level, message) => {
    try {
      const pending = client?.app?.log?.({ body: { service: "evolve-hud", level, message } });
      (pending as Promise<unknown> | undefined)?.catch?.(() => {});
    } catch {
      // The log itself failed: nowhere left to tell.
    }
  };
}

/**
 * Fail open: a hook's failure never escapes to OpenCode (the hook's output
 * is left as the body left it). Each kind of failure in each hook is logged
 * once. Failures `toldElsewhere` accepts are not: the sidecar client's
 * circuit breaker already logs one line when the HUD goes off and one when
 * it is back.
 */
export class FailOpen {
  private seen = new Set<string>();

  constructor(
    private log: Log,
    private toldElsewhere: (e: unknown) => boolean = () => false,
  ) {}

  /** `body` as a hook that never throws; `name` names it in the log. */
  hook<A extends unknown[]>(name: string, body: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
    return async (...args) => {
      try {
        await body(...args);
      } catch (e) {
        this.failed(name, e);
      }
    };
  }

  /** Records a failure of `where` (a hook, or fire-and-forget work it started). */
  failed(where: string, e: unknown): void {
    if (this.toldElsewhere(e)) return;
    const kind = (e as Error)?.name ?? typeof e;
    const key = `${where}: ${kind}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.log("warn", `evolve-hud: ${where} failed open (${kind}: ${(e as Error)?.message ?? e}); further ${kind}s there are not logged`);
  }
}
