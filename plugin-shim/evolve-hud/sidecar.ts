// The sidecar client, behind a circuit breaker.

import type { Config } from "./config.ts";
import { isObject } from "./hud.ts";
import { dialTarget, type DialTarget, type Lookup } from "./address.ts";
import { listenerOf, nonce, proves, readSecret } from "./identity.ts";
import { FALLBACK_CLIP, parseClipRule, type ClipRule } from "./slim.ts";
import type { Log } from "./log.ts";

export class SidecarError extends Error {
  constructor(
    message: string,
    readonly kind: "timeout" | "refused" | "unreachable" | "status" | "malformed" | "foreign",
    readonly status?: number,
    readonly body?: unknown,
  ) {
    super(message);
  }
}

/** After a refused connection (nothing listens: cheap to try), the next try comes this soon. */
const REFUSED_RETRY_MS = 1000;

export class Breaker {
  state: "closed" | "open" | "half-open" = "closed";
  private failures = 0;
  private openedAt = 0;
  private retryMs = 0;
  /** Called when the HUD goes off (with the failure) and when it is back. */
  onChange?: (on: boolean, error?: SidecarError) => void;

  constructor(
    private config: Pick<Config, "failureThreshold" | "cooldownMs">,
    private log: Log,
    private now: () => number = Date.now,
  ) {}

  /**
   * Whether a call may go out now. After its wait an open circuit is
   * half-open: calls go out (a forwarded event must not use up the sync's
   * trial) until one fails, which opens it again.
   */
  allow(): boolean {
    if (this.state === "open" && this.now() - this.openedAt >= this.retryMs) this.state = "half-open";
    return this.state !== "open";
  }

  success(): void {
    if (this.state !== "closed") {
      this.log("info", "evolve-hud: sidecar reachable again; HUD back on");
      this.onChange?.(true);
    }
    this.state = "closed";
    this.failures = 0;
  }

  failure(error: SidecarError): void {
    this.failures++;
    const refused = error.kind === "refused";
    // A timeout or a server that is not the user's sidecar opens it at once.
    const open =
      refused || this.state === "half-open" || error.kind === "timeout" || error.kind === "foreign" || this.failures >= this.config.failureThreshold;
    if (!open) return;
    // Nothing listening costs nothing to try again; a slow or broken one does.
    this.retryMs = refused ? Math.min(REFUSED_RETRY_MS, this.config.cooldownMs) : this.config.cooldownMs;
    if (this.state === "closed") {
      this.log(
        "warn",
        `evolve-hud: sidecar failing (${error.message}); HUD off, trying again every ${Math.round(this.retryMs / 1000)} s until it answers`,
      );
      this.onChange?.(false, error);
    }
    this.state = "open";
    this.openedAt = this.now();
  }
}

/** A server proven to know the user's secret: the address proven, and the secret to send there. */
interface Proven {
  target: DialTarget;
  secret: string;
}

export interface PostOptions {
  expected?: number[];
  timeoutMs?: number;
  modelBound?: boolean;
}

export class Sidecar {
  readonly breaker: Breaker;
  /** Called when nothing listens at the sidecar's address. */
  onRefused?: () => void;
  /** Called on every answer from the sidecar (an expected error status included). */
  onAnswered?: () => void;
  /** How the sidecar clips outputs, from its `/health`; the fallback until it has told. */
  clipRule: ClipRule = FALLBACK_CLIP;
  /** Whether `clipRule` is the sidecar's own (asked again after the sidecar was lost). */
  private ruleKnown = false;

  constructor(
    private config: Config,
    log: Log,
    now?: () => number,
    private env: Record<string, string | undefined> = process.env,
    /** How a host name that is neither `localhost` nor an IP is resolved (tests give their own). */
    private lookup?: Lookup,
  ) {
    this.breaker = new Breaker(config, log, now);
  }

  /**
   * POSTs JSON, or returns undefined at once while the circuit is open.
   * `expected` statuses (such as 409) come back as errors without counting
   * as failures. A `modelBound` call waits on the local model (compaction,
   * heartbeat) with its own `timeoutMs`: its timeout says the model was
   * slow, not that the sidecar is down, so it leaves a closed circuit closed
   * and the HUD keeps flowing.
   */
  async post(
    path: string,
    body: unknown,
    { expected = [], timeoutMs = this.config.timeoutMs, modelBound = false }: PostOptions = {},
  ): Promise<unknown> {
    if (!this.breaker.allow()) return undefined;
    try {
      const result = await this.request(path, body, timeoutMs);
      this.breaker.success();
      this.onAnswered?.();
      return result;
    } catch (e) {
      const error = e instanceof SidecarError ? e : new SidecarError(String(e), "unreachable");
      if (error.kind === "refused") this.onRefused?.();
      // A sidecar started again may be another version: ask its rule anew.
      if (error.kind === "refused" || error.kind === "unreachable" || error.kind === "foreign") this.ruleKnown = false;
      if (error.kind === "status") this.onAnswered?.();
      if (error.kind === "status" && expected.includes(error.status!)) this.breaker.success();
      else if (!(modelBound && error.kind === "timeout" && this.breaker.state === "closed")) this.breaker.failure(error);
      throw error;
    }
  }

  /**
   * Checks the server's identity, then POSTs with the secret as the bearer
   * token, to the very IP address that was proven: the name is not looked
   * up again in between.
   */
  private async request(path: string, body: unknown, timeoutMs: number): Promise<unknown> {
    // Requests made together share one check, and go out in the order made.
    this.verifying ??= this.verify(timeoutMs).finally(() => (this.verifying = undefined));
    const proven = await this.verifying;
    if (!this.ruleKnown) await this.learnClipRule(timeoutMs, proven);
    return this.exchange(proven.target, "POST", path, body, timeoutMs, proven.secret);
  }

  /** Takes the sidecar's clipping rule from its `/health`, so that a change there needs no change here; keeps the fallback when it says none. */
  private async learnClipRule(timeoutMs: number, { target, secret }: Proven): Promise<void> {
    try {
      const health = await this.exchange(target, "GET", "/health", undefined, timeoutMs, secret);
      const rule = isObject(health) ? parseClipRule(health.hud_clip) : undefined;
      if (rule) this.clipRule = rule;
      this.ruleKnown = true;
    } catch (e) {
      // A sidecar still loading answers 503 with the rule too.
      const body = e instanceof SidecarError ? e.body : undefined;
      const rule = isObject(body) ? parseClipRule(body.hud_clip) : undefined;
      if (rule) {
        this.clipRule = rule;
        this.ruleKnown = true;
      }
    }
  }

  /** The identity check in flight, if any. */
  private verifying?: Promise<Proven>;

  /**
   * Picks the IP address to dial, and asks the server there to prove that
   * it knows the user's secret for that address, before anything is sent to
   * it; returns the secret and the address proven. A server that cannot
   * gets nothing: a "foreign" error naming the port's holder.
   */
  private async verify(timeoutMs: number): Promise<Proven> {
    const url = this.config.url;
    let target: DialTarget;
    try {
      target = await dialTarget(url, this.lookup);
    } catch (e) {
      throw new SidecarError(`cannot find the address of ${url}: ${(e as Error)?.message ?? e}`, "unreachable");
    }
    const n = nonce();
    let answer: unknown;
    let what = "it does not know your secret";
    try {
      answer = await this.exchange(target, "GET", `/v1/identity?nonce=${n}`, undefined, timeoutMs);
    } catch (e) {
      if (!(e instanceof SidecarError) || e.kind !== "status") throw e;
      what = e.status === 404 ? "it has no /v1/identity (an older evolve-hud, or another server)" : `it answered /v1/identity with ${e.status}`;
    }
    const found = readSecret({ token: this.config.token, env: this.env });
    if ("problem" in found) {
      throw new SidecarError(`cannot check that the server at ${url} is your evolve-hud sidecar: ${found.problem}; nothing was sent to it`, "foreign");
    }
    if (isObject(answer) && proves(found.secret, target.address, n, answer.proof)) return { target, secret: found.secret };
    const loopback = target.ip.startsWith("127.") || target.ip === "::1";
    const local = loopback ? listenerOf(target.port, target.ip.includes(":")) : undefined;
    throw new SidecarError(
      `the server at ${url} is not your evolve-hud sidecar: ${what}${local ? ` (${local})` : ""}. Nothing was sent to it. ` +
        "Stop it, or serve yours on another port (EVOLVE_HUD_PORT)",
      "foreign",
    );
  }

  /** One request to `target` (the IP address dialled); errors name the URL the user configured. */
  private async exchange(
    target: DialTarget,
    method: "GET" | "POST",
    path: string,
    body: unknown,
    timeoutMs: number,
    secret?: string,
  ): Promise<unknown> {
    const headers: Record<string, string> = {};
    if (method === "POST") headers["content-type"] = "application/json";
    if (secret) headers.authorization = `Bearer ${secret}`;
    let response: Response;
    let text: string;
    try {
      response = await fetch(target.base + path, {
        method,
        headers,
        body: method === "POST" ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = await response.text();
    } catch (e) {
      const name = (e as { name?: string })?.name;
      if (name === "TimeoutError" || name === "AbortError") {
        throw new SidecarError(`no answer within ${timeoutMs} ms`, "timeout");
      }
      // Node says ECONNREFUSED in the cause; Bun (OpenCode's runtime) says
      // ConnectionRefused, or only "Unable to connect".
      const cause = (e as { cause?: { code?: string; message?: string } })?.cause;
      const code = (e as { code?: string })?.code ?? cause?.code;
      const message = String((e as Error)?.message ?? "");
      if (code === "ECONNREFUSED" || code === "ConnectionRefused" || message.startsWith("Unable to connect")) {
        throw new SidecarError(`no sidecar answers at ${this.config.url} (connection refused)`, "refused");
      }
      const why = cause?.message ?? (e as Error)?.message ?? String(e);
      throw new SidecarError(`cannot reach ${this.config.url}: ${why}`, "unreachable");
    }
    let parsed: unknown;
    try {
      parsed = text === "" ? undefined : JSON.parse(text);
    } catch {
      throw new SidecarError(`${path} answered ${response.status} with a body that is not JSON`, "malformed");
    }
    if (!response.ok) {
      // The sidecar's errors are OpenAI-shaped: {error: {message, type}}.
      const error = isObject(parsed) && isObject(parsed.error) ? parsed.error : undefined;
      const why = typeof error?.message === "string" ? `: ${error.message}` : "";
      throw new SidecarError(`${path} answered ${response.status}${why}`, "status", response.status, parsed);
    }
    return parsed;
  }
}
