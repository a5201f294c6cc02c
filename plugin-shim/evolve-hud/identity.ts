// The user's secret, and the check that the server at the sidecar's address
// knows it before anything (messages, the token) is sent there: the plugin
// sends a fresh nonce to `GET /v1/identity` and compares the answer with
// HMAC-SHA256(secret, "evolve-hud identity v1", port, nonce) computed here.
// A squatter on the port cannot answer it; one that relays the nonce to the
// user's sidecar on another port gets a proof for that port, which fails.

import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { readFileSync, lstatSync } from "node:fs";
import { join } from "node:path";

export interface SecretSource {
  /** The token from the plugin's options or `EVOLVE_HUD_AUTH_TOKEN`. */
  token?: string;
  env: Record<string, string | undefined>;
}

/** Where the user's secret lives: `$XDG_CONFIG_HOME/evolve-hud/token`, else `~/.config/evolve-hud/token` (the sidecar's own rule). */
export function secretPath(env: Record<string, string | undefined>): string | undefined {
  const config = env.XDG_CONFIG_HOME || (env.HOME ? join(env.HOME, ".config") : undefined);
  return config ? join(config, "evolve-hud", "token") : undefined;
}

/** The secret to prove and send: the configured token, `EVOLVE_HUD_AUTH_TOKEN_FILE`, else the user's secret; or why there is none. */
export function readSecret({ token, env }: SecretSource): { secret: string } | { problem: string } {
  if (token) return { secret: token };
  const explicit = env.EVOLVE_HUD_AUTH_TOKEN_FILE;
  const path = explicit || secretPath(env);
  if (!path) return { problem: "neither XDG_CONFIG_HOME nor HOME is set, so there is no secret to check the sidecar with" };
  try {
    if (!explicit) {
      const why = untrusted(path);
      if (why) return { problem: why };
    }
    const secret = readFileSync(path, "utf8").trim();
    return secret ? { secret } : { problem: `${path} is empty` };
  } catch (e) {
    const code = (e as { code?: string })?.code;
    if (code === "ENOENT") return { problem: `there is no secret at ${path} yet (the sidecar makes it when it starts)` };
    return { problem: `cannot read ${path}: ${(e as Error)?.message ?? e}` };
  }
}

/** Why a secret file (or its folder) is not this user's alone; undefined when it is. */
function untrusted(path: string): string | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  const dir = join(path, "..");
  const folder = lstatSync(dir);
  if (!folder.isDirectory() || folder.uid !== uid || (folder.mode & 0o022) !== 0) {
    return `${dir} is not a folder of yours alone (owner uid ${folder.uid}, mode ${(folder.mode & 0o777).toString(8)}); its secret is not used`;
  }
  const file = lstatSync(path);
  if (!file.isFile() || file.uid !== uid || (file.mode & 0o077) !== 0) {
    return `${path} is not a file of yours alone (owner uid ${file.uid}, mode ${(file.mode & 0o777).toString(8)}); \`chmod 600 ${path}\` and restart the sidecar`;
  }
  return undefined;
}

/** The proof that a server on `port` knows `secret`, for `nonce`. */
export function proof(secret: string, port: number, nonce: string): string {
  return createHmac("sha256", secret).update(`evolve-hud identity v1\nport ${port}\nnonce ${nonce}`).digest("hex");
}

export function nonce(): string {
  return randomBytes(16).toString("hex");
}

/** Whether `answer` is the proof of `port` and `nonce`, compared in constant time. */
export function proves(secret: string, port: number, nonce: string, answer: unknown): boolean {
  if (typeof answer !== "string") return false;
  const want = Buffer.from(proof(secret, port, nonce));
  const got = Buffer.from(answer.trim());
  return want.length === got.length && timingSafeEqual(want, got);
}

/** The port a URL connects to. */
export function portOf(url: string): number {
  const u = new URL(url);
  return u.port ? Number(u.port) : u.protocol === "https:" ? 443 : 80;
}

/** Who holds the listening socket of `port` on this machine, from `/proc/net/tcp`: "held by user bob (uid 1001)". */
export function listenerOf(port: number): string | undefined {
  const wanted = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] !== "0A" || !f[1]?.endsWith(wanted)) continue;
      const uid = Number(f[7]);
      if (uid === process.getuid?.()) return `port ${port} is held by a process of yours`;
      return `port ${port} is held by ${userName(uid) ?? "uid"} (uid ${uid}), another user`;
    }
  }
  return undefined;
}

function userName(uid: number): string | undefined {
  try {
    for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
      const [name, , id] = line.split(":");
      if (Number(id) === uid && name) return `user ${name}`;
    }
  } catch {
    // No name to give: the uid says it.
  }
  return undefined;
}
