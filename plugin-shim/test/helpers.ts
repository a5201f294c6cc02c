// Shared test helpers: the real OpenCode fixtures and a scriptable fake sidecar.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { AddressInfo } from "node:net";
import { canonicalIp, socketAddress } from "../evolve-hud/address.ts";
import { proof } from "../evolve-hud/identity.ts";

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, "../..");

/** The real OpenCode captures vendored in `tests/fixtures/opencode-1.18.33`, or `EVOLVE_HUD_FIXTURES`. */
export const fixturesDir = process.env.EVOLVE_HUD_FIXTURES ?? resolve(repoRoot, "tests/fixtures/opencode-1.18.33");

export interface Transform {
  name: string;
  messages: unknown[];
}

/** Every `transform-N.json` of every capture, in step order. */
export function transforms(): Transform[] {
  if (!existsSync(fixturesDir)) throw new Error(`fixtures not found at ${fixturesDir}`);
  const out: Transform[] = [];
  for (const capture of readdirSync(fixturesDir).sort()) {
    const dir = join(fixturesDir, capture);
    if (!existsSync(join(dir, "index.json"))) continue;
    const files = readdirSync(dir)
      .filter((f) => /^transform-\d+\.json$/.test(f))
      .sort((a, b) => Number(a.match(/\d+/)![0]) - Number(b.match(/\d+/)![0]));
    for (const f of files) {
      const data = JSON.parse(readFileSync(join(dir, f), "utf8"));
      out.push({ name: `${capture}/${f}`, messages: data.output.messages });
    }
  }
  return out;
}

export function fixture(capture: string, file: string): any {
  return JSON.parse(readFileSync(join(fixturesDir, capture, file), "utf8"));
}

export const clone = <T>(v: T): T => structuredClone(v);

export type Behaviour =
  | { kind: "ok" }
  | { kind: "hang" }
  | { kind: "status"; status: number }
  | { kind: "garbage" }
  | { kind: "slow"; ms: number }
  /** Sends the head at once and the body after `ms`, as a sidecar holding a sync for the model does. */
  | { kind: "held"; ms: number }
  | { kind: "resync-once" }
  /** Answers everything, but cannot prove it knows the user's secret: a squatter. */
  | { kind: "foreign" };

export interface Recorded {
  path: string;
  headers: IncomingMessage["headers"];
  body: any;
}

/** The secret every test sidecar knows, fake or real (see `opencode.ts`): give it to the plugin as its `token`. */
export const TEST_SECRET = "evolve-hud-plugin-test-secret";

/** The header that gives a test sidecar's API its token. */
export const AUTH = { authorization: `Bearer ${TEST_SECRET}` };

/** The id of the session the sidecar at `url` saw last (the HUD's text names none). */
export async function latestSession(url: string): Promise<string | undefined> {
  const list = await (await fetch(url + "/v1/hud", { headers: AUTH })).json();
  return list?.sessions?.[0]?.session_id;
}

/** A fake sidecar answering the HUD API the way `behaviour` says; it proves it knows {@link TEST_SECRET} (identity checks are not recorded). */
export class FakeSidecar {
  requests: Recorded[] = [];
  /** Identity checks answered. */
  identities = 0;
  /** What `GET /health` answers (not recorded in `requests`). */
  health: Record<string, unknown> = { status: "ok" };
  readonly secret = TEST_SECRET;
  behaviour: Behaviour = { kind: "ok" };
  /** The address its proofs name, in place of the one each question came in on: a relay to a sidecar serving elsewhere. */
  proveAs?: string;
  /** The `Host` header of every request, identity checks included. */
  hosts: string[] = [];
  private server: Server;
  private hanging = new Set<ServerResponse>();
  private resynced = false;

  private constructor(server: Server) {
    this.server = server;
  }

  /** A fake sidecar listening on `host` (an IP address), on a free port or `port`. */
  static async start(host = "127.0.0.1", port = 0): Promise<FakeSidecar> {
    let self!: FakeSidecar;
    const server = createServer((req, res) => self.handle(req, res));
    self = new FakeSidecar(server);
    await new Promise<void>((ok, fail) => {
      server.once("error", fail);
      server.listen(port, host, ok);
    });
    return self;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  get url(): string {
    const { address, port } = this.server.address() as AddressInfo;
    return `http://${socketAddress(address, port)}`;
  }

  syncs(): Recorded[] {
    return this.requests.filter((r) => r.path === "/v1/hud/sync");
  }

  compactions(): Recorded[] {
    return this.requests.filter((r) => r.path.endsWith("/compaction"));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      const identity = req.url?.match(/^\/v1\/identity\?nonce=([\w-]+)$/);
      if (identity) {
        this.identities++;
        this.hosts.push(req.headers.host ?? "");
        // As the sidecar does: the address the question's connection came in on.
        const at = this.proveAs ?? socketAddress(canonicalIp(req.socket.localAddress!)!, req.socket.localPort!);
        const secret = this.behaviour.kind === "foreign" ? "another secret" : TEST_SECRET;
        return send(res, 200, { proof: proof(secret, at, identity[1]) });
      }
      this.hosts.push(req.headers.host ?? "");
      if (req.url === "/health") return send(res, 200, this.health);
      const body = raw ? JSON.parse(raw) : undefined;
      this.requests.push({ path: req.url ?? "", headers: req.headers, body });
      const b = this.behaviour;
      const answer = () => {
        if (req.url === "/v1/hud/event") return send(res, 202, { accepted: true });
        if (req.url?.endsWith("/compaction")) {
          const text = "## Goal\nfake compaction facts";
          return send(res, 200, { text, prompt: `Summarize.\n\n${text}`, model_status: "none" });
        }
        send(res, 200, {
          session_id: body.session_id,
          version: this.syncs().length,
          tokens: 10,
          hud: `<evolve-hud session="${body.session_id}" v=${this.syncs().length}>\nTool calls: ${body.messages.length} new\n</evolve-hud>`,
        });
      };
      switch (b.kind) {
        case "ok":
        case "foreign":
          return answer();
        case "hang":
          this.hanging.add(res);
          return;
        case "status":
          return send(res, b.status, { error: "boom", type: "internal" });
        case "garbage":
          res.writeHead(200, { "content-type": "application/json" });
          return void res.end("{not json");
        case "slow":
          return void setTimeout(answer, b.ms);
        case "held": {
          res.writeHead(200, { "content-type": "application/json" });
          res.flushHeaders();
          // The answer's own head is already out.
          res.writeHead = (() => res) as any;
          return void setTimeout(answer, b.ms);
        }
        case "resync-once":
          if (!this.resynced && !body.full) {
            this.resynced = true;
            return send(res, 409, { error: "unknown session", type: "resync_required" });
          }
          return answer();
      }
    });
  }

  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((ok) => this.server.close(() => ok()));
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

/**
 * A port with nothing listening on it, below the kernel's ephemeral range
 * (32768–60999 by default): a port the system handed out for `listen(0)`
 * and took back goes to the next `listen(0)` (the test's own fake model)
 * as readily as to the sidecar the test starts on it. Each is checked free
 * by binding it, and none is given twice in a process.
 */
export async function deadPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (givenPorts.has(port)) continue;
    const server = createServer();
    const bound = await new Promise<boolean>((ok) => {
      server.once("error", () => ok(false));
      server.listen(port, "127.0.0.1", () => ok(true));
    });
    if (!bound) continue;
    await new Promise<void>((ok) => server.close(() => ok()));
    givenPorts.add(port);
    return port;
  }
}
const givenPorts = new Set<number>();

/** The `p`-quantile of `values` by nearest rank; undefined when empty. */
export function quantile(values: number[], p: number): number | undefined {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? undefined : sorted[Math.round((sorted.length - 1) * p)];
}

/**
 * Runs the shim's transform hook on each array (a fresh copy each time),
 * checks that the HUD came out last, and returns the times per step, sorted,
 * with their p50/p99/max for reports.
 */
export async function timeSteps(
  transform: (input: {}, output: { messages: any[] }) => Promise<void>,
  arrays: unknown[][],
  isHud: (m: unknown) => boolean,
): Promise<{ times: number[]; report: string }> {
  const times: number[] = [];
  for (const messages of arrays) {
    const output = { messages: clone(messages) as any[] };
    const started = performance.now();
    await transform({}, output);
    times.push(performance.now() - started);
    if (!isHud(output.messages.at(-1))) throw new Error("no HUD after the step");
  }
  times.sort((a, b) => a - b);
  const at = (p: number) => quantile(times, p)!.toFixed(2);
  return { times, report: `p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms per step (${times.length} steps)` };
}

/** A tmux server of its own with one window of a fixed size, for driving a
 * terminal program as a person would. */
export class Tmux {
  private constructor(private socket: string) {}

  static start(command: string, width = 100, height = 30): Tmux {
    const socket = join(tmpdir(), `evolve-hud-tmux-${process.pid}-${Date.now()}`);
    const tmux = new Tmux(socket);
    tmux.run("new-session", "-d", "-x", String(width), "-y", String(height), command);
    return tmux;
  }

  private run(...args: string[]): string {
    const r = spawnSync("tmux", ["-S", this.socket, ...args], { encoding: "utf8" });
    if (r.error) throw new Error(`tmux is needed (scripts/setup.sh installs it): ${r.error.message}`);
    if (r.status !== 0) throw new Error(`tmux ${args[0]} failed: ${r.stderr}`);
    return r.stdout;
  }

  screen(): string {
    return this.run("capture-pane", "-p", "-t", "0");
  }

  keys(...keys: string[]): void {
    this.run("send-keys", "-t", "0", ...keys);
  }

  /** The screen once `check` holds, within `ms`; throws with the screen. */
  async waitFor(what: string, ms: number, check: (screen: string) => boolean): Promise<string> {
    const deadline = performance.now() + ms;
    for (;;) {
      const screen = this.screen();
      if (check(screen)) return screen;
      if (performance.now() > deadline) throw new Error(`the screen did not show ${what} within ${ms} ms:\n${screen}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  stop(): void {
    spawnSync("tmux", ["-S", this.socket, "kill-server"]);
    rmSync(this.socket, { force: true });
  }
}
