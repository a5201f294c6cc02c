// What masking did in each session, kept in a file of the user's own
// (`<state folder>/evolve-hud/masks/<session>.json`), so that an OpenCode
// started again puts the same stubs, in the same words, into its first
// request: the prompt cache written before the restart is read, not written
// again. Nothing else is in it: the masked texts stay in OpenCode's storage.

import { rmSync } from "node:fs";
import { join } from "node:path";
import { isObject } from "./hud.ts";
import type { Log } from "./log.ts";
import { ownFolder, readOwnedFile, userDir, writePrivateFile } from "./private.ts";

/** A stub applied, where it stands (an input field, or the output), and for a read of a file changed since, the call that changed it. */
export interface Stub {
  stub: string;
  field: string | undefined;
  before?: string;
}

/** A session's masking: the stubs in the order applied, the request size of the last batch, and when each mask waiting for a batch was first offered. */
export interface SessionMasks {
  applied: Map<string, Stub>;
  batchedAt: number;
  offered: Map<string, number>;
}

/** A session id that can name a file: OpenCode's (`ses_…`) are. */
const SESSION_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** The masks folder of the user's state folder; nothing is kept where it is not the user's alone. */
export class MaskFiles {
  private told = false;

  constructor(
    private dir: string,
    private log: Log,
  ) {}

  /** The folder for `env`'s user. */
  static of(env: Record<string, string | undefined>, log: Log): MaskFiles {
    return new MaskFiles(join(userDir(env, "state"), "masks"), log);
  }

  /** What was kept for `sessionID`; undefined when nothing was (or it could not be read, said once). */
  load(sessionID: string): SessionMasks | undefined {
    const file = this.file(sessionID);
    if (file === undefined) return undefined;
    const read = readOwnedFile(file);
    if ("missing" in read) return undefined;
    if ("problem" in read) return this.failed(`not reading the masks kept for ${sessionID}: ${read.problem}`);
    try {
      return parse(JSON.parse(read.text));
    } catch (e) {
      return this.failed(`not reading the masks kept in ${file}: ${(e as Error)?.message ?? e}`);
    }
  }

  /** Keeps `masks` for `sessionID`; a failure is told once and loses only the keeping. */
  save(sessionID: string, masks: SessionMasks): void {
    const file = this.file(sessionID);
    if (file === undefined) return;
    const folder = ownFolder(this.dir);
    if (!("ok" in folder)) {
      this.failed(`not keeping masks across restarts: ${"refused" in folder ? folder.refused : folder.failed}`);
      return;
    }
    const kept = { version: 1, applied: [...masks.applied], batchedAt: masks.batchedAt, offered: [...masks.offered] };
    try {
      writePrivateFile(file, JSON.stringify(kept));
    } catch (e) {
      this.failed(`not keeping masks across restarts: ${file}: ${(e as Error)?.message ?? e}`);
    }
  }

  /** Drops what was kept for `sessionID` (deleted, or compacted: its messages are gone). */
  remove(sessionID: string): void {
    const file = this.file(sessionID);
    if (file === undefined) return;
    try {
      rmSync(file, { force: true });
    } catch {
      // Left behind: a later session of the same id cannot exist.
    }
  }

  private file(sessionID: string): string | undefined {
    return SESSION_ID.test(sessionID) ? join(this.dir, `${sessionID}.json`) : undefined;
  }

  private failed(why: string): undefined {
    if (!this.told) this.log("warn", `evolve-hud: ${why}`);
    this.told = true;
    return undefined;
  }
}

/** A kept file's masks; throws on any field out of shape. */
function parse(kept: unknown): SessionMasks {
  if (!isObject(kept) || kept.version !== 1 || !Array.isArray(kept.applied) || !Array.isArray(kept.offered)) throw new Error("not a masks file of this version");
  if (typeof kept.batchedAt !== "number" || !Number.isInteger(kept.batchedAt) || kept.batchedAt < 0) throw new Error("batchedAt is not a count");
  const applied = new Map<string, Stub>();
  for (const entry of kept.applied) {
    const [callID, s] = Array.isArray(entry) ? entry : [];
    const field = isObject(s) ? s.field : undefined;
    const before = isObject(s) ? s.before : undefined;
    if (
      typeof callID !== "string" ||
      !isObject(s) ||
      typeof s.stub !== "string" ||
      !s.stub.startsWith("[evolve-hud:") ||
      (field !== undefined && typeof field !== "string") ||
      (before !== undefined && typeof before !== "string")
    ) {
      throw new Error("a mask out of shape");
    }
    applied.set(callID, { stub: s.stub, field, ...(before === undefined ? {} : { before }) });
  }
  const offered = new Map<string, number>();
  for (const entry of kept.offered) {
    const [callID, at] = Array.isArray(entry) ? entry : [];
    if (typeof callID !== "string" || typeof at !== "number" || !Number.isInteger(at)) throw new Error("an offer out of shape");
    offered.set(callID, at);
  }
  return { applied, batchedAt: kept.batchedAt, offered };
}
