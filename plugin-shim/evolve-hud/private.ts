// Files and folders the launcher trusts: what another local account could
// make or write (the state folder, the sidecar's log, the launch record, the
// binary it names) could hand it the sidecar's output or make the plugin run
// its program. So each is made with modes that keep others out, and its
// owner and mode are checked before it is used (as the sidecar does in
// `src/private.rs`). Where the platform has no user ids, nothing is checked.

import {
  accessSync,
  chmodSync,
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
  type Stats,
} from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";

/** Each base folder's variable and its place under HOME. */
const BASES = {
  config: ["XDG_CONFIG_HOME", ".config"],
  state: ["XDG_STATE_HOME", ".local/state"],
  cache: ["XDG_CACHE_HOME", ".cache"],
} as const;

/**
 * The user's base folder of `kind` by the XDG rule the sidecar shares
 * (src/private.rs, `Base`; both run the cases of
 * tests/fixtures/xdg-bases.json): `$XDG_CONFIG_HOME` else `~/.config`,
 * `$XDG_STATE_HOME` else `~/.local/state`, `$XDG_CACHE_HOME` else
 * `~/.cache`, an empty value counting as unset; undefined when neither it
 * nor HOME is set.
 */
export function baseDir(env: Record<string, string | undefined>, kind: keyof typeof BASES): string | undefined {
  const [variable, underHome] = BASES[kind];
  return env[variable] || (env.HOME ? join(env.HOME, underHome) : undefined);
}

/** evolve-hud's folder of `kind` (config or state) of this user (see `baseDir`), with the OS's home where HOME is unset. */
export function userDir(env: Record<string, string | undefined>, kind: "config" | "state"): string {
  // With HOME set to the OS's home there always is one.
  return join(baseDir({ ...env, HOME: env.HOME || homedir() }, kind) ?? homedir(), "evolve-hud");
}

/** This process's user id; undefined where there are none. */
export function me(): number | undefined {
  return process.getuid?.();
}

const octal = (mode: number) => (mode & 0o7777).toString(8);

/** Whether a folder lets another user swap what is in it: writable by others without the sticky bit, or another user's (root excepted: it could anyway). */
export function swappable(folder: Stats, uid: number): boolean {
  const sticky = (folder.mode & 0o1000) !== 0;
  return (folder.uid !== uid && folder.uid !== 0) || ((folder.mode & 0o002) !== 0 && !sticky);
}

export type FolderCheck =
  /** The folder is the user's alone; `note` says it was made so. */
  | { ok: true; note?: string }
  /** Another user's, or a link: nothing of the sidecar's may go there. */
  | { refused: string }
  /** It could not be made or read (a file in the way): the caller does without it. */
  | { failed: string };

/**
 * Makes `dir` (mode 0700) unless it exists, and checks it: a folder of the
 * user's with group or other bits is made 0700; a link, or a folder of
 * another user's, is refused.
 */
export function ownFolder(dir: string): FolderCheck {
  let made: string | undefined;
  let makeError: unknown;
  try {
    made = mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (e) {
    makeError = e;
  }
  let folder: Stats;
  try {
    folder = lstatSync(dir);
  } catch (e) {
    return { failed: message(makeError ?? e) };
  }
  if (folder.isSymbolicLink()) {
    return { refused: `${dir} is a symbolic link, not a folder of yours; remove it, or set XDG_STATE_HOME to a folder you own` };
  }
  if (!folder.isDirectory()) return { failed: message(makeError ?? new Error(`${dir} is not a folder`)) };
  const uid = me();
  if (uid === undefined) return { ok: true };
  if (folder.uid !== uid) {
    return { refused: `${dir} is owned by uid ${folder.uid}, not by you (uid ${uid}); remove it, or set XDG_STATE_HOME to a folder you own` };
  }
  try {
    // A folder just made is set to 0700 whatever the umask; an older one of the user's that others may enter is made so.
    if (made !== undefined) chmodSync(dir, 0o700);
    else if ((folder.mode & 0o077) !== 0) {
      chmodSync(dir, 0o700);
      return { ok: true, note: `made ${dir} yours alone (was mode ${octal(folder.mode)}, now 700)` };
    }
  } catch (e) {
    return { refused: `${dir} could not be made yours alone (chmod 700: ${message(e)})` };
  }
  return { ok: true };
}

/**
 * Opens `file` to append to, as the user's alone: made 0600, an existing
 * one of the user's with looser modes made so; a link or a file of another
 * user's is not opened (throws, saying why).
 */
export function openPrivateLog(file: string): number {
  // O_NOFOLLOW: a link is not followed to a file elsewhere; O_NONBLOCK: a FIFO does not hang the open.
  const flags = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;
  const fd = openSync(file, flags, 0o600);
  try {
    const stat = fstatSync(fd);
    const uid = me();
    if (!stat.isFile()) throw new Error(`${file} is not a regular file`);
    if (uid !== undefined && stat.uid !== uid) throw new Error(`${file} is owned by uid ${stat.uid}, not by you (uid ${uid})`);
    if ((stat.mode & 0o077) !== 0) fchmodSync(fd, 0o600);
    return fd;
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/**
 * The text of `file` if it is a regular file of the user's that no one else
 * may write (the launch record: it names the program the plugin runs);
 * `missing` when there is none; else why it is not used.
 */
export function readOwnedFile(file: string): { text: string } | { missing: true } | { problem: string } {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as { code?: string })?.code;
    if (code === "ENOENT" || code === "ENOTDIR") return { missing: true };
    if (code === "ELOOP") return { problem: `${file} is a symbolic link, not a file of yours` };
    return { problem: `cannot read ${file}: ${message(e)}` };
  }
  try {
    const stat = fstatSync(fd);
    const uid = me();
    if (!stat.isFile()) return { problem: `${file} is not a regular file` };
    if (uid !== undefined && stat.uid !== uid) return { problem: `${file} is owned by uid ${stat.uid}, not by you (uid ${uid})` };
    if (uid !== undefined && (stat.mode & 0o022) !== 0) {
      return { problem: `${file} can be written by other users (mode ${octal(stat.mode)}); \`chmod 600 ${file}\` makes it yours alone` };
    }
    return { text: readFileSync(fd, "utf8") };
  } catch (e) {
    return { problem: `cannot read ${file}: ${message(e)}` };
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes `text` to `file` as the user's alone (0600), whole or not at all:
 * into a new file beside it, then renamed over it. Throws, saying why.
 */
export function writePrivateFile(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  // O_EXCL with O_NOFOLLOW: a file or link someone put there is not written through.
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** Where `binary` is: itself when it names a path, else the first executable file of that name on `PATH`. */
export function findBinary(binary: string, env: Record<string, string | undefined>): string | undefined {
  if (binary.includes("/")) return isAbsolute(binary) ? binary : resolve(binary);
  // Without PATH, the default search path of execvp.
  for (const dir of (env.PATH ?? "/usr/local/bin:/usr/bin:/bin").split(delimiter)) {
    const candidate = resolve(dir || ".", binary);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // Not here: the next folder.
    }
  }
  return undefined;
}

export type BinaryCheck = { path: string } | { missing: string } | { refused: string };

/** The path and each folder above it, from `/` down: `/a/b` gives `/`, `/a`, `/a/b`. */
function fromRoot(path: string): string[] {
  const out = [path];
  for (let up = dirname(path); up !== out[0]; up = dirname(up)) out.unshift(up);
  return out;
}

/**
 * Why another user may have put or swapped what `path` leads to, checked
 * as OpenSSH's StrictModes (`secure_filename`) checks a key: every folder
 * from `/` down must be owned by the user or root and writable by neither
 * its group nor others, unless it has the sticky bit (`/tmp`: there no one
 * else may rename or remove what is not theirs, and what is in it is
 * checked in turn). A link on the way must be the user's or root's, and
 * the folder holding it passes the same check. `path` is absolute; `named`
 * says it in messages; `links` whether a link may be met (none on a path
 * already resolved). The last entry itself is checked here only when it
 * is a link. Undefined when no one else could have; `missing` when
 * something on the way is not there.
 */
function strictPath(path: string, uid: number, named: string, links: boolean): { missing: string } | { refused: string } | undefined {
  const steps = fromRoot(path);
  for (const [i, step] of steps.entries()) {
    let stat: Stats;
    try {
      stat = lstatSync(step);
    } catch (e) {
      const code = (e as { code?: string })?.code;
      if (code === "ENOENT" || code === "ENOTDIR") return { missing: `there is no ${named}` };
      return { refused: `cannot check ${step} on the way to ${named} (${message(e)}); not run` };
    }
    const theirs = stat.uid !== uid && stat.uid !== 0;
    if (stat.isSymbolicLink()) {
      if (!links) return { refused: `${step}, on the way to ${named}, became a symbolic link while it was checked; not run` };
      if (theirs) {
        const link = i === steps.length - 1 ? `${named} is a symbolic link` : `${named} goes through the symbolic link ${step}`;
        return { refused: `${link} owned by uid ${stat.uid}, neither you (uid ${uid}) nor root; not run` };
      }
      continue;
    }
    if (i === steps.length - 1) break;
    if (!stat.isDirectory()) return { missing: `there is no ${named} (${step} is not a folder)` };
    const sticky = (stat.mode & 0o1000) !== 0;
    if (theirs || ((stat.mode & 0o022) !== 0 && !sticky)) {
      return {
        refused: `${named} is in ${step}, where another user can replace it (owner uid ${stat.uid}, mode ${octal(stat.mode)}); not run`,
      };
    }
  }
  return undefined;
}

/**
 * The program to run for `binary` (a path, or a name on `PATH`), checked
 * as OpenSSH's StrictModes checks a file (`strictPath`), both the path as
 * named (a link on the way, the last one included, must be the user's or
 * root's, in a folder no one else can write) and the path with every link
 * resolved: a regular file owned by the user or root that no one else may
 * write, in folders no one else can swap anything in, from `/` down. The
 * path returned is the resolved one checked, so the program run is the
 * program checked.
 */
export function trustedBinary(binary: string, env: Record<string, string | undefined>): BinaryCheck {
  const found = findBinary(binary, env);
  if (!found) return { missing: "not found on PATH" };
  const uid = me();
  if (uid !== undefined) {
    const asNamed = strictPath(found, uid, found, true);
    if (asNamed) return asNamed;
  }
  let real: string;
  let stat: Stats;
  try {
    real = realpathSync(found);
    stat = lstatSync(real);
  } catch (e) {
    return { missing: (e as { code?: string })?.code === "ENOENT" ? `there is no ${found}` : message(e) };
  }
  const named = real === found ? real : `${found} (${real})`;
  if (uid === undefined) return stat.isFile() ? { path: real } : { refused: `${named} is not a regular file; not run` };
  const resolved = strictPath(real, uid, named, false);
  if (resolved) return resolved;
  if (!stat.isFile()) return { refused: `${named} is not a regular file; not run` };
  if (stat.uid !== uid && stat.uid !== 0) return { refused: `${named} is owned by uid ${stat.uid}, neither you (uid ${uid}) nor root; not run` };
  if ((stat.mode & 0o022) !== 0) {
    return { refused: `${named} is writable by ${stat.mode & 0o002 ? "others" : "its group"} (mode ${octal(stat.mode)}); not run. \`chmod go-w ${real}\` if it is yours` };
  }
  return { path: real };
}

function message(e: unknown): string {
  return (e as Error)?.message ?? String(e);
}
