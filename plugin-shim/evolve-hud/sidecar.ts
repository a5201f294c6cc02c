// The sidecar client, behind a circuit breaker.

import { routePath, type PostBody, type PostRoute } from "./api.ts";
import type { Config } from "./config.ts";
import { isObject } from "./hud.ts";
import { dialTarget, type DialTarget, type Lookup } from "./address.ts";
import { describeHolder, listenerOf, nonce, proves, readSecret } from "./identity.ts";
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
/**
 * After a foreign answer (another program holds the port), the next call
 * tries again: the check is one loopback request, and the HUD is back at
 * the step after the port is freed.
 */
const FOREIGN_RETRY_MS = 0;

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
    const foreign = error.kind === "foreign";
    // A timeout or a server that is not the user's sidecar opens it at once.
    const open =
      refused || this.state === "half-open" || error.kind === "timeout" || error.kind === "foreign" || this.failures >= this.config.failureThreshold;
    if (!open) return;
    // Nothing listening, or another program's quick "no", costs nothing to try again; a slow or broken sidecar does.
    const cooldown = this.config.cooldownMs;
    this.retryMs = refused ? Math.min(REFUSED_RETRY_MS, cooldown) : foreign ? Math.min(FOREIGN_RETRY_MS, cooldown) : cooldown;
    if (this.state === "closed") {
      const when = this.retryMs === 0 ? "at every call" : `every ${Math.round(this.retryMs / 1000)} s`;
      this.log("warn", `evolve-hud: sidecar failing (${error.message}); HUD off, trying again ${when} until it answers`);
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
  /** The session of a route that names one (`{session}`). */
  session?: string;
  expected?: number[];
  /** Longest wait for the answer's head (status and headers). */
  timeoutMs?: number;
  /**
   * How much longer its body may take: a sync that asked the sidecar to
   * hold it for the model's findings (`wait_ms`) gets its head at once and
   * its body when the wait ends. A sidecar that hangs still fails at
   * `timeoutMs`.
   */
  holdMs?: number;
  modelBound?: boolean;
}

export class Sidecar {
  readonly breaker: Breaker;
  /** Called when nothing listens at the sidecar's address. */
  onRefused?: () => void;
  /** Called on every answer from the sidecar (an expected error status included). */
  onAnswered?: () => void;
  /** Called on every failed call (an expected status is no failure). */
  onFailed?: (error: SidecarError) => void;
  /** Called with the sidecar's `/health` (200 or 503 body) each time it is read: once per sidecar found. */
  onHealth?: (health: Record<string, unknown>) => void;
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
  async post<R extends PostRoute>(
    route: R,
    body: PostBody<R>,
    { session, expected = [], timeoutMs = this.config.timeoutMs, holdMs = 0, modelBound = false }: PostOptions = {},
  ): Promise<unknown> {
    if (!this.breaker.allow()) return undefined;
    try {
      const result = await this.request(routePath(route, session), body, timeoutMs, holdMs);
      this.breaker.success();
      this.onAnswered?.();
      return result;
    } catch (e) {
      const error = e instanceof SidecarError ? e : new SidecarError(String(e), "unreachable");
      if (error.kind === "refused") this.onRefused?.();
      // A sidecar started again (a 409: it lost the sessions) may be another version: ask its rule anew.
      if (error.kind === "refused" || error.kind === "unreachable" || error.kind === "foreign" || error.status === 409) this.ruleKnown = false;
      if (error.kind === "status") this.onAnswered?.();
      if (error.kind === "status" && error.status !== undefined && expected.includes(error.status)) this.breaker.success();
      else if (!(modelBound && error.kind === "timeout" && this.breaker.state === "closed")) {
        this.breaker.failure(error);
        this.onFailed?.(error);
      }
      throw error;
    }
  }

  /**
   * Checks the server's identity, then POSTs with the secret as the bearer
   * token, to the very IP address that was proven: the name is not looked
   * up again in between.
   */
  private async request(path: string, body: unknown, timeoutMs: number, holdMs: number): Promise<unknown> {
    // Requests made together share one check, and go out in the order made.
    this.verifying ??= this.verify(timeoutMs).finally(() => (this.verifying = undefined));
    const proven = await this.verifying;
    if (!this.ruleKnown) await this.learnClipRule(timeoutMs, proven);
    return this.exchange(proven.target, "POST", path, body, timeoutMs, proven.secret, holdMs);
  }

  /**
   * Takes the sidecar's clipping rule from its `/health`, so that a change
   * there needs no change here (keeps the fallback when it says none), and
   * hands the health on (`onHealth`: a sidecar serving facts without a
   * model says what is missing there).
   */
  private async learnClipRule(timeoutMs: number, { target, secret }: Proven): Promise<void> {
    let health: unknown;
    try {
      health = await this.exchange(target, "GET", routePath("/health"), undefined, timeoutMs, secret);
      this.ruleKnown = true;
    } catch (e) {
      // A sidecar still loading answers 503 with the rule too.
      health = e instanceof SidecarError && e.kind === "status" ? e.body : undefined;
    }
    if (!isObject(health)) return;
    const rule = parseClipRule(health.hud_clip);
    if (rule) {
      this.clipRule = rule;
      this.ruleKnown = true;
    }
    this.onHealth?.(health);
  }

  /** The identity check in flight, if any. */
  private verifying?: Promise<Proven>;

  /**
   * Picks the IP address to dial, and asks the server there to prove that
   * it knows the user's secret for that address, before anything is sent to
   * it; returns the secret and the address proven. Any answer that is not
   * the proof (a 404, a 401, no JSON, no proof, a wrong one) is a "foreign"
   * error: it names the program holding the port, where this machine says,
   * and what to do.
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
    let what: string | undefined;
    try {
      answer = await this.exchange(target, "GET", `${routePath("/v1/identity")}?nonce=${n}`, undefined, timeoutMs);
    } catch (e) {
      // An answer, but not JSON or not 200: not the user's sidecar (timeouts and refusals are what they are).
      if (!(e instanceof SidecarError) || (e.kind !== "status" && e.kind !== "malformed")) throw e;
      what = `it answered /v1/identity with ${e.status}${e.kind === "malformed" ? ", not JSON" : ""}`;
    }
    const found = readSecret({ token: this.config.token, env: this.env });
    if ("problem" in found) {
      throw new SidecarError(`cannot check that the server at ${url} is your evolve-hud sidecar: ${found.problem}; nothing was sent to it`, "foreign");
    }
    if (what === undefined) {
      if (isObject(answer) && proves(found.secret, target.address, n, answer.proof)) return { target, secret: found.secret };
      what = isObject(answer) && typeof answer.proof === "string" ? "it does not know your secret" : "its answer to /v1/identity holds no proof";
    }
    throw new SidecarError(foreignMessage(url, target, what), "foreign");
  }

  /** One request to `target` (the IP address dialled); errors name the URL the user configured. */
  private async exchange(
    target: DialTarget,
    method: "GET" | "POST",
    path: string,
    body: unknown,
    timeoutMs: number,
    secret?: string,
    holdMs = 0,
  ): Promise<unknown> {
    const headers: Record<string, string> = {};
    if (method === "POST") headers["content-type"] = "application/json";
    if (secret) headers.authorization = `Bearer ${secret}`;
    let response: Response;
    let text: string;
    // The head within timeoutMs; the body within holdMs more.
    const abort = new AbortController();
    let timer = setTimeout(() => abort.abort(), timeoutMs);
    let limit = timeoutMs;
    try {
      response = await fetch(target.base + path, {
        method,
        headers,
        body: method === "POST" ? JSON.stringify(body) : undefined,
        signal: abort.signal,
      });
      if (holdMs > 0) {
        clearTimeout(timer);
        limit = timeoutMs + holdMs;
        timer = setTimeout(() => abort.abort(), limit);
      }
      text = await response.text();
    } catch (e) {
      clearTimeout(timer);
      const name = (e as { name?: string })?.name;
      if (name === "TimeoutError" || name === "AbortError") {
        throw new SidecarError(`no answer within ${limit} ms`, "timeout");
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
    clearTimeout(timer);
    let parsed: unknown;
    try {
      parsed = text === "" ? undefined : JSON.parse(text);
    } catch {
      throw new SidecarError(`${path} answered ${response.status} with a body that is not JSON`, "malformed", response.status);
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

/**
 * What the user is told of a server that is not their sidecar: for a port
 * of this machine, that another program holds it, which one (the socket
 * listening on the very address dialled) where this user may see it
 * (`listenerOf`), and how to get the HUD back.
 */
function foreignMessage(url: string, target: DialTarget, what: string): string {
  const loopback = target.ip.startsWith("127.") || target.ip === "::1";
  if (!loopback) {
    return `the server at ${url} is not your evolve-hud sidecar (${what}). Nothing was sent to it. Check the \`url\` setting (EVOLVE_HUD_URL)`;
  }
  const port = target.port;
  const holder = listenerOf(target.ip, port);
  const who = holder ? `: ${describeHolder(holder)}` : "";
  const stop = holder?.pid !== undefined && holder.uid === process.getuid?.() ? `Stop it (\`kill ${holder.pid}\`)` : "Stop it";
  const other = port < 65535 ? port + 1 : port - 1;
  return (
    `another program holds port ${port}${who}. It is not your evolve-hud sidecar (${what}), and nothing was sent to it. ` +
    `${stop}, or give the HUD another port: \`EVOLVE_HUD_PORT=${other} opencode\``
  );
}
