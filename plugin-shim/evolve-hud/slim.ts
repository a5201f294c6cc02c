// What is sent: slim copies holding only what the sidecar can use, so one
// sync body stays under PAGE_BYTES however long the session or its outputs.
// The sidecar keeps the same head and tail of each output and clips again
// itself; `clipped` carries the whole output's size and line count.

import type { ClipRule, SessionEvent } from "./api.ts";
import { isObject, type Entry, type Json } from "./hud.ts";

/** Longest string kept whole in tool inputs, infos and other fields. */
const STRING_MAX = 2048;
/** Array items kept in tool inputs (todo lists and the like). */
const ARRAY_MAX = 100;
/** A part's slim JSON above this keeps only short input fields. */
const PART_MAX = 24 * 1024;
/** Upper bound of one sync body. */
export const PAGE_BYTES = 256 * 1024;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const byteLength = (s: string) => Buffer.byteLength(s, "utf8");

/** Lines as the sidecar (Rust's `str::lines`) counts them. */
export function lineCount(s: string): number {
  if (s === "") return 0;
  let n = 0;
  for (let i = s.indexOf("\n"); i !== -1; i = s.indexOf("\n", i + 1)) n++;
  return s.endsWith("\n") ? n : n + 1;
}

/**
 * The first `head` and last `tail` bytes of `s`, cut at UTF-8 character
 * boundaries as the sidecar cuts them, and the byte length of the head part.
 * `undefined` when `s` fits whole.
 */
export function clipBytes(
  s: string,
  head: number,
  tail: number,
): { head: string; tail: string; between: () => string } | undefined {
  // A UTF-16 unit is at most 3 UTF-8 bytes: short strings skip the encoding.
  if (s.length * 3 <= head + tail) return undefined;
  const bytes = encoder.encode(s);
  if (bytes.length <= head + tail) return undefined;
  let h = head;
  while (h > 0 && (bytes[h] & 0xc0) === 0x80) h--;
  let t = bytes.length - Math.min(tail, bytes.length - h);
  while (t < bytes.length && (bytes[t] & 0xc0) === 0x80) t++;
  return {
    head: decoder.decode(bytes.subarray(0, h)),
    tail: decoder.decode(bytes.subarray(t)),
    between: () => decoder.decode(bytes.subarray(h, t)),
  };
}

/**
 * How the sidecar clips a tool output, as its `/health` tells it
 * (`hud_clip`): the bytes of the head and tail kept, and for the part left
 * out, the lines that say something failed (one of `words`), trimmed, up to
 * `lines` lines of at most `line_bytes` (longer ones are left out) and
 * `bytes` in all. Sending what the sidecar keeps costs nothing it would use.
 */
export type { ClipRule };

/** The rule until the sidecar has told its own: the sidecar's (a test against the real one holds it). */
export const FALLBACK_CLIP: ClipRule = {
  head: 2048,
  tail: 2048,
  middle: {
    words: [
      "error", "fail", "panic", "exception", "fatal", "denied", "not found", "cannot", "traceback",
      "undefined reference", "undefined symbol", "segmentation fault", "core dumped",
      "assert", "expected", "!=", "mismatch", "undefined", "undeclared", "missing", "no such", "invalid",
      "unexpected", "timed out", "timeout", "not ok", "aborted", "segmentation", "incomplete", "focused",
    ],
    lines: 64,
    bytes: 6144,
    line_bytes: 240,
  },
};

/** `hud_clip` from the sidecar's `/health`, if it has the expected shape and sane sizes. */
export function parseClipRule(v: unknown): ClipRule | undefined {
  const size = (n: unknown, max: number) => typeof n === "number" && Number.isInteger(n) && n >= 0 && n <= max;
  if (!isObject(v) || !isObject(v.middle)) return undefined;
  const m = v.middle;
  const words = Array.isArray(m.words) && m.words.every((w) => typeof w === "string" && w !== "") ? (m.words as string[]) : undefined;
  if (!words || !size(v.head, 1 << 20) || !size(v.tail, 1 << 20) || !size(m.lines, 1000) || !size(m.bytes, 1 << 20) || !size(m.line_bytes, 1 << 16)) {
    return undefined;
  }
  return {
    head: v.head as number,
    tail: v.tail as number,
    middle: { words: words.map((w) => w.toLowerCase()), lines: m.lines as number, bytes: m.bytes as number, line_bytes: m.line_bytes as number },
  };
}

/** The lines of `between` (the text between a clipped output's head and tail) the sidecar keeps. */
export function middleLines(between: string, headEndsLine: boolean, tailStartsLine: boolean, rule: ClipRule = FALLBACK_CLIP): string[] {
  const { words, lines: maxLines, bytes: maxBytes, line_bytes: maxLineBytes } = rule.middle;
  const lines = between.split("\n");
  if (!headEndsLine) lines.shift();
  if (!tailStartsLine || lines[lines.length - 1] === "") lines.pop();
  const kept: string[] = [];
  let bytes = 0;
  for (const raw of lines) {
    if (kept.length >= maxLines) break;
    const line = raw.replace(/\r$/, "").trim();
    const n = byteLength(line);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses.
    if (n > maxLineBytes || /[\u0000-\u001f\u007f-\u009f]/.test(line)) continue;
    const lower = line.toLowerCase();
    if (!words.some((w) => lower.includes(w))) continue;
    if (bytes + n > maxBytes) break;
    bytes += n;
    kept.push(line);
  }
  return kept;
}

/** A string cut to its start and end with a marker between, for fields the sidecar reads a line of. */
function shortString(s: string, max = STRING_MAX): string {
  const clipped = clipBytes(s, Math.floor((max * 3) / 4), Math.floor(max / 4));
  if (!clipped) return s;
  return `${clipped.head}\n…\n${clipped.tail}`;
}

/** JSON data with strings shortened, arrays cut and deep nesting dropped. */
function slimValue(v: unknown, max = STRING_MAX, depth = 0): unknown {
  if (typeof v === "string") return shortString(v, max);
  if (v === null || typeof v !== "object") return v;
  if (depth >= 4) return null;
  if (Array.isArray(v)) return v.slice(0, ARRAY_MAX).map((x) => slimValue(x, max, depth + 1));
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) out[k] = slimValue(x, max, depth + 1);
  return out;
}

/** An object's first 32 scalar fields (numbers, booleans, strings of up to `max` characters). */
function scalars(v: unknown, max = 256): Json | undefined {
  if (!isObject(v)) return undefined;
  const out: Json = {};
  let n = 0;
  for (const [k, x] of Object.entries(v)) {
    if (k.length > 64) continue;
    if (typeof x === "number" || typeof x === "boolean" || (typeof x === "string" && x.length <= max)) out[k] = x;
    if (++n >= 32) break;
  }
  return out;
}

/** A tool part's state: output as its head and tail, metadata without copies of the output. */
function slimToolState(state: Json, rule: ClipRule): Json {
  const out: Json = {
    status: state.status,
    input: slimValue(state.input),
    ...(isObject(state.time) ? { time: scalars(state.time) } : {}),
    ...(typeof state.title === "string" ? { title: shortString(state.title, 256) } : {}),
  };
  // Bash metadata repeats the output: that copy is left out.
  const metadata = scalars(isObject(state.metadata) ? { ...state.metadata, output: undefined } : undefined);
  if (metadata) out.metadata = metadata;
  if (typeof state.error === "string") out.error = shortString(state.error, rule.head);
  if (typeof state.output === "string") {
    const clipped = clipBytes(state.output, rule.head, rule.tail);
    out.output = clipped ? clipped.head + clipped.tail : state.output;
    if (clipped) {
      const between = clipped.between();
      const middle = middleLines(between, clipped.head.endsWith("\n"), between.endsWith("\n"), rule);
      out.clipped = {
        head: byteLength(clipped.head),
        bytes: byteLength(state.output),
        lines: lineCount(state.output),
        ...(middle.length > 0 ? { middle } : {}),
      };
    }
  }
  // Inputs with many long fields (a multi-file patch) keep short strings
  // only, then scalars only; past that, the metadata keeps `exit` only.
  const fallbacks = [
    () => (out.input = slimValue(state.input, 256, 2)),
    () => (out.input = scalars(state.input, 256) ?? {}),
    () => (out.metadata = scalars({ exit: metadata?.exit }) ?? {}),
  ];
  for (const fallback of fallbacks) {
    if (byteLength(JSON.stringify(out)) <= PART_MAX) break;
    fallback();
  }
  return out;
}

type ToolEvent = Extract<SessionEvent, { type: "tool.execute.after" }>;

/** The `args`, `output` and `metadata` of a `tool.execute.after` event, slimmed as a part's state is. */
export function slimToolEvent(
  args: unknown,
  output: { title?: unknown; output?: unknown; metadata?: unknown } | undefined,
  rule: ClipRule = FALLBACK_CLIP,
): Pick<ToolEvent, "args" | "output" | "metadata" | "clipped"> {
  const state = slimToolState({ status: "completed", input: args, output: output?.output, metadata: output?.metadata }, rule);
  return {
    args: state.input,
    output: typeof state.output === "string" ? state.output : undefined,
    metadata: state.metadata,
    clipped: state.clipped as ToolEvent["clipped"],
  };
}

/** A part as the sidecar needs it: tools and texts slimmed, other kinds as their scalars. */
function slimPart(p: unknown, rule: ClipRule): Json {
  if (!isObject(p)) return { type: "unknown" };
  if (p.type === "tool" && isObject(p.state)) {
    return { ...scalars(p, 1024), state: slimToolState(p.state, rule) };
  }
  if (p.type === "text" && typeof p.text === "string") {
    return { ...scalars(p, 1024), text: shortString(p.text, rule.head + rule.tail) };
  }
  return scalars(p, 1024) ?? {};
}

/** A message as the sidecar needs it: the info's scalars, time, path and model, and slim parts. */
export function slimEntry(m: Entry, rule: ClipRule = FALLBACK_CLIP): Entry {
  const info: Json = { ...scalars(m.info, 1024) };
  for (const key of ["time", "path", "model", "summary"]) {
    const v = m.info[key];
    if (isObject(v)) info[key] = scalars(v, 4096);
  }
  return { info, parts: m.parts.map((p) => slimPart(p, rule)) };
}

/**
 * Slim copies of `entries` in pages of at most PAGE_BYTES each, in order. An
 * entry too big for one page is split by parts (the sidecar merges parts,
 * so the halves add up to the whole).
 */
export function pages(entries: Entry[], sessionID: string, limit = PAGE_BYTES, rule: ClipRule = FALLBACK_CLIP): Entry[][] {
  // Room for `{"session_id":…,"messages":[…],"full":false}`.
  const frame = byteLength(JSON.stringify({ session_id: sessionID, messages: [], full: false }));
  const room = limit - frame;
  const out: Entry[][] = [];
  let page: Entry[] = [];
  let size = 0;
  const push = (e: Entry, bytes: number) => {
    if (page.length > 0 && size + bytes + 1 > room) {
      out.push(page);
      page = [];
      size = 0;
    }
    page.push(e);
    size += bytes + 1;
  };
  for (const m of entries) {
    const slim = slimEntry(m, rule);
    const bytes = byteLength(JSON.stringify(slim));
    if (bytes + 1 <= room) {
      push(slim, bytes);
      continue;
    }
    // Split by parts: each piece carries the info and as many parts as fit.
    const infoBytes = byteLength(JSON.stringify({ info: slim.info, parts: [] }));
    let piece: Json[] = [];
    let pieceBytes = infoBytes;
    for (const part of slim.parts) {
      const partBytes = byteLength(JSON.stringify(part)) + 1;
      if (piece.length > 0 && pieceBytes + partBytes + 1 > room) {
        push({ info: slim.info, parts: piece }, pieceBytes);
        piece = [];
        pieceBytes = infoBytes;
      }
      piece.push(part);
      pieceBytes += partBytes;
    }
    push({ info: slim.info, parts: piece }, pieceBytes);
  }
  if (page.length > 0 || out.length === 0) out.push(page);
  return out;
}
