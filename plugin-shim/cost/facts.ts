// The facts a masked output held, read from the output itself (OpenCode's
// stored copy, `opencode export`) by rules of its own, independent of the
// sidecar's parsers: for a run, the exit status, the count of failures, and
// the names on the lines that say something failed; for a read, the file
// and how many lines it had. A masked output keeps its facts when each is
// in its stub or in the HUD of the same request.

export interface Original {
  tool: string;
  output: string;
  exit?: number;
  /** The file a read read. */
  path?: string;
}

export interface Fact {
  what: string;
  /** Any one of these, as a whole word, keeps the fact. */
  anyOf: string[];
}

const SUMMARY = [
  /(\d+) (?:failed|failing)\b/gi,
  /\bfailures=(\d+)/g,
  /\berrors=(\d+)/g,
  /(\d+) (?:failures?|errors?)\b/gi,
];
const FAILING_LINE = /^\s*(?:FAIL(?:ED)?\b|ERROR\b|not ok\b|✗|✕|×)|\s(?:FAIL(?:ED)?|ERROR)\b/;
const NAME = /[A-Za-z_][\w./:[\]-]*[\w\]]/g;

/** The names on a failing line: words with a `_`, `.`, `:` or `/` in them, or a digit (`test_parse`, `mod::case`, `a.py:12`). */
function namesOn(line: string): string[] {
  return [...line.matchAll(NAME)].map((m) => m[0]).filter((w) => w.length >= 4 && /[_.:/\d]/.test(w) && !/^https?:/.test(w));
}

/** The facts of one output: its first `maxNames` failing lines (a stub names a few; the rest is the count). */
export function factsOf(o: Original, maxNames = 8): Fact[] {
  const facts: Fact[] = [];
  if (o.tool === "read") {
    const file = o.path?.split("/").at(-1);
    if (file) facts.push({ what: `the file ${file}`, anyOf: [file] });
    const total = /total (\d+) lines/.exec(o.output)?.[1];
    if (total) facts.push({ what: `${total} lines`, anyOf: [`${total} lines`] });
    return facts;
  }
  if (o.tool === "bash" && typeof o.exit === "number" && o.exit !== 0) facts.push({ what: `exit ${o.exit}`, anyOf: [`exit ${o.exit}`] });
  for (const line of o.output.split("\n")) {
    let failed = 0;
    for (const re of SUMMARY) for (const m of line.matchAll(re)) failed += Number(m[1]);
    // `failures=2, errors=1` and `2 failures, 1 error` both count 3 on the line.
    if (failed > 0 && /\b(?:tests?|passed|failed|failures?|errors?|examples?|ran)\b/i.test(line))
      facts.push({ what: `${failed} failed (${line.trim().slice(0, 80)})`, anyOf: [String(failed)] });
  }
  const failing = o.output.split("\n").filter((l) => FAILING_LINE.test(l) && namesOn(l).length > 0);
  for (const line of failing.slice(0, maxNames)) facts.push({ what: `failing line: ${line.trim().slice(0, 100)}`, anyOf: namesOn(line) });
  return dedupe(facts);
}

function dedupe(facts: Fact[]): Fact[] {
  const seen = new Set<string>();
  return facts.filter((f) => !seen.has(f.what) && seen.add(f.what));
}

const wordIn = (text: string, w: string) => new RegExp(`(?<![\\w.])${w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![\\w])`).test(text);

/** The facts of `o` that neither `stub` nor `hud` holds. */
export function lostFacts(o: Original, stub: string, hud: string): Fact[] {
  return factsOf(o).filter((f) => !f.anyOf.some((w) => wordIn(stub, w) || wordIn(hud, w)));
}
