// The user's secret, and the check that the server at the sidecar's address
// knows it before anything (messages, the token) is sent there: the plugin
// sends a fresh nonce to `GET /v1/identity` and compares the answer with
// HMAC-SHA256(secret, "evolve-hud identity v2", address, nonce) computed
// here, address being the IP and port dialled (see `address.ts`). A squatter
// on the port cannot answer it; one that relays the nonce to the user's
// sidecar on another port or address (the other loopback, `[::1]`) gets a
// proof for the sidecar's own address, which fails.

import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, readlinkSync, statSync } from "node:fs";
import { endianness } from "node:os";
import { dirname, join } from "node:path";
import { canonicalIp } from "./address.ts";
import { baseDir, swappable } from "./private.ts";

export interface SecretSource {
  /** The token from the plugin's options or `EVOLVE_HUD_AUTH_TOKEN`. */
  token?: string;
  env: Record<string, string | undefined>;
}

/** Where the user's secret lives: `$XDG_CONFIG_HOME/evolve-hud/token`, else `~/.config/evolve-hud/token` (the sidecar's own rule). */
export function secretPath(env: Record<string, string | undefined>): string | undefined {
  const config = baseDir(env, "config");
  return config ? join(config, "evolve-hud", "token") : undefined;
}

/** The secret to prove and send: the configured token, `EVOLVE_HUD_AUTH_TOKEN_FILE`, else the user's secret; or why there is none. */
export function readSecret({ token, env }: SecretSource): { secret: string } | { problem: string } {
  if (token) return { secret: token };
  const explicit = env.EVOLVE_HUD_AUTH_TOKEN_FILE;
  const path = explicit || secretPath(env);
  if (!path) return { problem: "neither XDG_CONFIG_HOME nor HOME is set, so there is no secret to check the sidecar with" };
  try {
    const why = explicit ? untrustedExplicit(path) : untrusted(path);
    if (why) return { problem: why };
    const secret = readFileSync(path, "utf8").trim();
    return secret ? { secret } : { problem: `${path} is empty` };
  } catch (e) {
    const code = (e as { code?: string })?.code;
    if (code === "ENOENT" && explicit) return { problem: `there is no token file at ${path} (EVOLVE_HUD_AUTH_TOKEN_FILE)` };
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

/**
 * Why a token file named by `EVOLVE_HUD_AUTH_TOKEN_FILE` is not this user's
 * alone; undefined when it is. As ssh checks a key (and the sidecar this
 * file): a token others can read is a token others have. Its folder is the
 * user's choice (a home, `/run/user/UID`), so only a folder that lets
 * another user swap the file is refused: one writable by others without the
 * sticky bit, or one owned by another user (root excepted: it could anyway).
 */
function untrustedExplicit(path: string): string | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  // A link is followed, as the sidecar follows it: the file it leads to is what is read.
  const file = statSync(path);
  const mode = (file.mode & 0o777).toString(8);
  if (!file.isFile() || file.uid !== uid || (file.mode & 0o077) !== 0) {
    return (
      `the token file ${path} is not a file of yours alone (owner uid ${file.uid}, mode ${mode}, you are uid ${uid}); it is not used. ` +
      `\`chmod 600 ${path}\` if it is yours, and make a new token, since others may have read it`
    );
  }
  const dir = dirname(path);
  const folder = statSync(dir);
  if (swappable(folder, uid)) {
    return (
      `the token file ${path} is in ${dir}, where another user can replace it (owner uid ${folder.uid}, mode ${(folder.mode & 0o7777).toString(8)}); ` +
      `it is not used. Keep the token in a folder of yours`
    );
  }
  return undefined;
}

/** The text the proof is over: the address (`127.0.0.1:8377`, `[::1]:8377`) and the nonce. */
function proofText(address: string, nonce: string): string {
  return `evolve-hud identity v2\naddress ${address}\nnonce ${nonce}`;
}

/** The proof that a server at `address` (IP and port, as `socketAddress` writes it) knows `secret`, for `nonce`. */
export function proof(secret: string, address: string, nonce: string): string {
  return createHmac("sha256", secret).update(proofText(address, nonce)).digest("hex");
}

export function nonce(): string {
  return randomBytes(16).toString("hex");
}

/** Whether `answer` is the proof of `address` and `nonce`, compared in constant time. */
export function proves(secret: string, address: string, nonce: string, answer: unknown): boolean {
  if (typeof answer !== "string") return false;
  const want = Buffer.from(proof(secret, address, nonce));
  const got = Buffer.from(answer.trim());
  return want.length === got.length && timingSafeEqual(want, got);
}

/** Who holds a listening socket: its owner, and the process where this user may see it. */
export interface Holder {
  port: number;
  uid: number;
  /** The socket's inode, which names it in `/proc/PID/fd`. */
  inode: string;
  /** The process holding it, found only among the processes this user may look into (their own; root: all). */
  pid?: number;
  /** Its command name (`/proc/PID/comm`). */
  name?: string;
}

/** The last holder found, by socket: a holder asked about at every step is looked up once. */
let lastHolder: Holder | undefined;

/** Reads one of the kernel's socket tables (`/proc/net/tcp`, `/proc/net/tcp6`): the file, or a stand-in in tests. */
export type TableReader = (table: string) => string;

const readTable: TableReader = (table) => readFileSync(table, "utf8");

/**
 * An address as `/proc/net/tcp{,6}` writes it (each 32-bit word in hex, in
 * the machine's byte order: `0100007F` is 127.0.0.1 on a little-endian
 * one), as `canonicalIp` writes it; undefined when it is not one. The
 * sidecar reads it the same way (`proc_address` in src/holder.rs).
 */
export function procAddress(hex: string, littleEndian: boolean = endianness() === "LE"): string | undefined {
  if ((hex.length !== 8 && hex.length !== 32) || !/^[0-9A-Fa-f]+$/.test(hex)) return undefined;
  const bytes = Buffer.alloc(hex.length / 2);
  for (let i = 0; i < hex.length / 8; i++) {
    const word = Number.parseInt(hex.slice(i * 8, i * 8 + 8), 16);
    if (littleEndian) bytes.writeUInt32LE(word, i * 4);
    else bytes.writeUInt32BE(word, i * 4);
  }
  if (bytes.length === 4) return bytes.join(".");
  const groups = Array.from({ length: 8 }, (_, i) => bytes.readUInt16BE(i * 2).toString(16));
  return canonicalIp(groups.join(":"));
}

/**
 * Who holds the listening socket that got a connection to `ip` (as
 * `canonicalIp` writes it) and `port` on this machine: the socket bound to
 * that very address, or one bound to every address (`0.0.0.0` for IPv4,
 * `::` for both, a dual-stack socket taking IPv4 too), never one on
 * another address with the same port (another loopback address may be
 * another account's relay). Its owner from `/proc/net/tcp` (the table of
 * the address family dialled first), and the process from the
 * `socket:[INODE]` links in `/proc/PID/fd`, where this user may read them.
 */
export function listenerOf(ip: string, port: number, read: TableReader = readTable): Holder | undefined {
  const dialled = canonicalIp(ip);
  if (dialled === undefined) return undefined;
  const ipv6 = dialled.includes(":");
  const wanted = port.toString(16).toUpperCase().padStart(4, "0");
  const tables = ["/proc/net/tcp", "/proc/net/tcp6"];
  for (const table of ipv6 ? tables.reverse() : tables) {
    let text: string;
    try {
      text = read(table);
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      // sl local_address rem_address st … uid timeout inode: LISTEN is state 0A.
      const f = line.trim().split(/\s+/);
      const [hex, at] = f[1]?.split(":") ?? [];
      if (f[3] !== "0A" || at?.toUpperCase() !== wanted || hex === undefined) continue;
      const local = procAddress(hex);
      if (local !== dialled && local !== "::" && !(local === "0.0.0.0" && !ipv6)) continue;
      const uid = Number(f[7]);
      const inode = f[9] ?? "";
      if (lastHolder && lastHolder.inode === inode && lastHolder.port === port && inode !== "0") return lastHolder;
      lastHolder = { port, uid, inode, ...processOf(inode, uid) };
      return lastHolder;
    }
  }
  return undefined;
}

/** The process of this user's (root: any) with `socket:[inode]` open; nothing where it cannot be seen. */
function processOf(inode: string, uid: number): { pid?: number; name?: string } {
  const me = process.getuid?.();
  // Another user's processes' descriptors cannot be read: do not try.
  if (!inode || inode === "0" || (me !== 0 && me !== uid)) return {};
  const link = `socket:[${inode}]`;
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  } catch {
    return {};
  }
  for (const pid of pids) {
    try {
      if (me !== 0 && statSync(`/proc/${pid}`).uid !== uid) continue;
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        let target: string;
        try {
          target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        } catch {
          continue;
        }
        if (target !== link) continue;
        let name: string | undefined;
        try {
          name = readFileSync(`/proc/${pid}/comm`, "utf8").trim() || undefined;
        } catch {
          // Gone meanwhile: the pid still says who it was.
        }
        return { pid: Number(pid), name };
      }
    } catch {
      // Gone, or not this user's to look into: the next one.
    }
  }
  return {};
}

/**
 * The holder in words: "python3 (pid 4242)" for a process of this user's
 * found, "a program of yours" for one not found, "user bob (uid 1001)"
 * (and its process, where root sees it) for another user's.
 */
export function describeHolder(holder: Holder): string {
  const who = holder.pid !== undefined ? `${holder.name ?? "a program"} (pid ${holder.pid})` : undefined;
  if (holder.uid === process.getuid?.()) return who ?? "a program of yours";
  const owner = `${userName(holder.uid) ?? "user"} (uid ${holder.uid})`;
  return who ? `${who} of ${owner}` : `a program of ${owner}`;
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
