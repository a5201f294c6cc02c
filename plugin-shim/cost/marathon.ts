// A long session of a coding agent at work, made only of real runs of real
// tools: a Python module with a unittest suite, a C library with its own test
// runner and a generated-code build, a JS module with a TAP-style runner, a
// lint that stays failing for a while, git, searches, reads of large files
// (again after edits, and again without any), and small chores at the end.
// Every bug is planted so the suites really fail, and each `edit` really fixes
// one. The outputs are deterministic (no timestamps, PIDs or random names;
// git dates are fixed) except unittest's "Ran N tests in 0.004s".
//
// Files are written by `write` steps, generated here so that they are large
// but read like code; the bash steps run python3, gcc/make, node, git, grep,
// awk, sed, perl and ruby in the project directory.

import { join } from "node:path";
import type { Scenario } from "./fake-anthropic.ts";
import { bash, edit, L, read, rng, write } from "./steps.ts";

// --- Data shared by the Python module, its tests and the CSV -----------------

const CURRENCIES: [string, string, number, string][] = [
  ["EUR", "Euro", 2, "1"],
  ["USD", "US dollar", 2, "0.9210"],
  ["GBP", "Pound sterling", 2, "1.1700"],
  ["CHF", "Swiss franc", 2, "1.0450"],
  ["JPY", "Japanese yen", 0, "0.006150"],
  ["SEK", "Swedish krona", 2, "0.0870"],
  ["NOK", "Norwegian krone", 2, "0.0855"],
  ["DKK", "Danish krone", 2, "0.1341"],
  ["PLN", "Polish zloty", 2, "0.2310"],
  ["CZK", "Czech koruna", 2, "0.0398"],
  ["HUF", "Hungarian forint", 2, "0.002530"],
  ["RON", "Romanian leu", 2, "0.2010"],
  ["BGN", "Bulgarian lev", 2, "0.5113"],
  ["ISK", "Icelandic krona", 0, "0.006620"],
  ["CAD", "Canadian dollar", 2, "0.6790"],
  ["AUD", "Australian dollar", 2, "0.6050"],
  ["NZD", "New Zealand dollar", 2, "0.5560"],
  ["SGD", "Singapore dollar", 2, "0.6880"],
  ["HKD", "Hong Kong dollar", 2, "0.1180"],
  ["CNY", "Chinese yuan", 2, "0.1280"],
  ["INR", "Indian rupee", 2, "0.01105"],
  ["KRW", "South Korean won", 0, "0.000690"],
  ["BRL", "Brazilian real", 2, "0.1650"],
  ["MXN", "Mexican peso", 2, "0.0510"],
  ["ZAR", "South African rand", 2, "0.0502"],
  ["TRY", "Turkish lira", 2, "0.0265"],
  ["ILS", "Israeli new shekel", 2, "0.2480"],
  ["AED", "UAE dirham", 2, "0.2508"],
  ["THB", "Thai baht", 2, "0.0258"],
  ["KWD", "Kuwaiti dinar", 3, "3.0020"],
  ["BHD", "Bahraini dinar", 3, "2.4430"],
  ["TND", "Tunisian dinar", 3, "0.2950"],
];

// raw payee, clean name, category, typical amount (cents, negative: spending), currency
const PAYEES: [string, string, string, number, string][] = [
  ["ACME GROCERIES 0043", "Acme Groceries", "groceries", -5400, "EUR"],
  ["ACME GROCERIES 0117", "Acme Groceries", "groceries", -3900, "EUR"],
  ["FRESHMART BERLIN", "FreshMart", "groceries", -2750, "EUR"],
  ["BIOLADEN KREUZBERG", "Bioladen Kreuzberg", "groceries", -1890, "EUR"],
  ["DB BAHN ONLINE", "Deutsche Bahn", "travel", -8990, "EUR"],
  ["LUFTHANSA 220-1234", "Lufthansa", "travel", -31400, "EUR"],
  ["BOOKING.COM", "Booking.com", "travel", -24600, "GBP"],
  ["STADTWERKE STROM", "Stadtwerke", "utilities", -8200, "EUR"],
  ["TELEKOM MOBILFUNK", "Telekom", "utilities", -3499, "EUR"],
  ["NETFLIX.COM", "Netflix", "subscriptions", -1299, "EUR"],
  ["SPOTIFY AB", "Spotify", "subscriptions", -1099, "EUR"],
  ["GITHUB INC", "GitHub", "subscriptions", -400, "USD"],
  ["HETZNER ONLINE", "Hetzner", "subscriptions", -1547, "EUR"],
  ["AMZN MKTP DE", "Amazon", "shopping", -4599, "EUR"],
  ["IKEA KAARST", "IKEA", "home", -12900, "EUR"],
  ["DM DROGERIE", "dm", "household", -2315, "EUR"],
  ["APOTHEKE AM MARKT", "Apotheke am Markt", "health", -1650, "EUR"],
  ["DR MED SCHULZ", "Dr. Schulz", "health", -6000, "EUR"],
  ["CAFE KRANZLER", "Cafe Kranzler", "eating out", -1420, "EUR"],
  ["PIZZERIA NAPOLI", "Pizzeria Napoli", "eating out", -3850, "EUR"],
  ["SHELL 4711", "Shell", "car", -7210, "EUR"],
  ["ARAL STATION 88", "Aral", "car", -6830, "EUR"],
  ["FINANZAMT KOELN", "Finanzamt", "taxes", -45000, "EUR"],
  ["HAUSVERWALTUNG MEIER", "Meier (rent)", "rent", -95000, "EUR"],
  ["SMITH, JONES & CO", "Smith, Jones & Co", "professional", -45000, "EUR"],
  ["ACME CORP PAYROLL", "Acme Corp (salary)", "income", 325000, "EUR"],
];

const CATEGORY_RULES: [string, string][] = [
  ["PAYROLL", "income"],
  ["GROCERIES", "groceries"],
  ["FRESHMART", "groceries"],
  ["BIOLADEN", "groceries"],
  ["BAHN", "travel"],
  ["LUFTHANSA", "travel"],
  ["BOOKING", "travel"],
  ["STADTWERKE", "utilities"],
  ["TELEKOM", "utilities"],
  ["NETFLIX", "subscriptions"],
  ["SPOTIFY", "subscriptions"],
  ["GITHUB", "subscriptions"],
  ["HETZNER", "subscriptions"],
  ["AMZN", "shopping"],
  ["IKEA", "home"],
  ["DROGERIE", "household"],
  ["APOTHEKE", "health"],
  ["DR MED", "health"],
  ["CAFE", "eating out"],
  ["PIZZERIA", "eating out"],
  ["SHELL", "car"],
  ["ARAL", "car"],
  ["FINANZAMT", "taxes"],
  ["HAUSVERWALTUNG", "rent"],
  ["SMITH, JONES", "professional"],
];

// name, what it checks, prefix pattern (A letter, 9 digit), kind, min, max, dropped chars, valid, invalid
const VALIDATORS: [string, string, string, string, number, number, string, string, string][] = [
  ["iban", "an IBAN", "AA99", "alnum", 15, 34, "", "DE89 3704 0044 0532 0130 00", "DE89 3704 0044"],
  ["bic", "a BIC (SWIFT code)", "AAAAAA", "alnum", 8, 11, "", "COBADEFFXXX", "COBA1EFF"],
  ["account_number", "an account number", "", "digits", 6, 12, "", "0532013000", "05320A3000"],
  ["sort_code", "a UK sort code", "", "digits", 6, 6, "-", "20-00-00", "20-00-0"],
  ["routing_number", "a US routing number", "", "digits", 9, 9, "", "021000021", "02100002"],
  ["vat_id", "a VAT identification number", "AA", "alnum", 4, 14, "", "DE 123456789", "123456789"],
  ["postcode", "a postcode", "", "alnum", 3, 10, "", "SW1A 1AA", "SW1A-1AA"],
  ["phone", "a phone number", "", "digits", 7, 15, "+-()", "+49 (30) 1234-5678", "+49 30 CALL ME"],
  ["invoice_number", "an invoice number", "AAA", "alnum", 6, 12, "-", "INV-000123", "IN0001"],
  ["cost_centre", "a cost centre", "AA99", "alnum", 5, 8, "-", "CC10-7", "C1107"],
  ["card_last4", "the last four digits of a card", "", "digits", 4, 4, "", "4242", "42424"],
  ["reference", "a payment reference", "", "alnum", 1, 35, "", "RF18 5390 0754 7034", "RF18/5390"],
];

const normalised = (value: string, drop: string) => [...value.toUpperCase()].filter((c) => c !== " " && !drop.includes(c)).join("");

// --- py/ledger.py ------------------------------------------------------------

function ledgerPy(): string {
  const cur = CURRENCIES.map(([c, n, d, r]) => `    "${c}": ("${n}", ${d}, "${r}"),`).join("\n");
  const seen = new Set<string>();
  const aliases = PAYEES.filter(([raw]) => !seen.has(raw) && seen.add(raw))
    .map(([raw, clean]) => `    ${JSON.stringify(raw)}: ${JSON.stringify(clean)},`)
    .join("\n");
  const rules = CATEGORY_RULES.map(([k, c]) => `    (${JSON.stringify(k)}, ${JSON.stringify(c)}),`).join("\n");
  const prefixWords = (p: string) =>
    p ? `starts with ${p.length} character${p.length > 1 ? "s" : ""} of the form ${p}` : "has no fixed prefix";
  const validators = VALIDATORS.map(([name, what, prefix, kind, lo, hi, drop]) =>
    L(
      `def validate_${name}(value):`,
      `    """Check ${what}.`,
      ``,
      `    The value ${prefixWords(prefix)} (A: a letter, 9: a digit), then`,
      `    holds only ${kind === "digits" ? "digits" : "letters and digits"}, ${lo === hi ? `exactly ${lo}` : `${lo} to ${hi}`} characters in all${drop ? ` once blanks and ${JSON.stringify(drop)} are removed` : " once blanks are removed"}.`,
      `    Returns the value so normalised and upper-cased; raises LedgerError otherwise.`,
      `    """`,
      `    v = "".join(c for c in value.upper() if c not in " ${drop}")`,
      `    if not _match(v, "${prefix}", "${kind}", ${lo}, ${hi}):`,
      `        raise LedgerError("invalid ${name.replace(/_/g, " ")}: %r" % value)`,
      `    return v`,
      ``,
    ),
  ).join("\n");
  return String.raw`"""Ledger: parse, convert and summarise bookkeeping records.

Records come from the CSV exports of the bank accounts, one line per
transaction, after a header line:

    date,payee,amount,currency,category,memo

Amounts are kept as Decimal throughout; nothing here uses floats, so that
totals add up to the cent the way the bank statements do.  Dates are kept
in the zero-padded ISO form (iso_date) once a record is parsed.
"""

from decimal import Decimal, InvalidOperation, ROUND_HALF_EVEN

# --- Currencies --------------------------------------------------------------

#: code -> (name, minor units, value of one unit in EUR)
CURRENCIES = {
${cur}
}

# --- Payees and categories ---------------------------------------------------

#: The payee as the bank writes it -> the name we file it under.
PAYEE_ALIASES = {
${aliases}
}

# Rules are tried in order and the first keyword found in the upper-cased payee wins, so more specific keywords come first.
CATEGORY_RULES = [
${rules}
]

#: The fields of a CSV line, in order.
FIELDS = ("date", "payee", "amount", "currency", "category", "memo")


class LedgerError(ValueError):
    """A record that cannot be parsed, validated or converted."""


class Record:
    """One transaction: when, to or from whom, how much, in what, and why."""

    __slots__ = FIELDS

    def __init__(self, date, payee, amount, currency="EUR", category="", memo=""):
        self.date = date
        self.payee = payee
        self.amount = amount
        self.currency = currency
        self.category = category
        self.memo = memo

    def key(self):
        """The fields that identify a transaction, for finding duplicates."""
        return (self.date, self.payee, self.amount, self.currency)

    def __eq__(self, other):
        if not isinstance(other, Record):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in FIELDS)

    def __repr__(self):
        return "Record(%r, %r, %s %s, %r)" % (
            self.date, self.payee, self.amount, self.currency, self.category)


# --- Amounts -----------------------------------------------------------------

def parse_amount(text):
    """Parse an amount as the banks write it.

    Accepts ${"``"}1,234.50${"``"}, ${"``"}-12.00${"``"}, ${"``"}+3${"``"}, ${"``"}(12.50)${"``"} (the accountants'
    negative) and a trailing currency code (${"``"}12.50 EUR${"``"}), which is
    ignored here.  Returns a Decimal; raises LedgerError if the text is
    not an amount.
    """
    s = text.strip()
    if not s:
        raise LedgerError("empty amount")
    parts = s.split()
    if len(parts) == 2 and parts[1].isalpha():
        s = parts[0]
    negative = False
    if s.startswith("(") and s.endswith(")"):
        s = s[1:-1]
        negative = False
    if s.startswith("-"):
        negative = True
        s = s[1:]
    elif s.startswith("+"):
        s = s[1:]
    s = s.replace(",", "")
    try:
        value = Decimal(s)
    except InvalidOperation:
        raise LedgerError("not an amount: %r" % text) from None
    return -value if negative else value


def minor_units(currency):
    """Number of decimals of a currency: 2 for most, 0 for JPY, 3 for KWD."""
    try:
        return CURRENCIES[currency.upper()][1]
    except KeyError:
        raise LedgerError("unknown currency: %s" % currency) from None


def round_amount(value, currency="EUR"):
    """Round to the currency's minor units, half to even (banker's rounding)."""
    quantum = Decimal(1).scaleb(-minor_units(currency))
    return value.quantize(quantum, rounding=ROUND_HALF_EVEN)


def rate_to_eur(currency):
    """How many euros one unit of the currency is worth (CURRENCIES)."""
    try:
        return Decimal(CURRENCIES[currency][2])
    except KeyError:
        raise LedgerError("unknown currency: %s" % currency) from None


def convert(amount, src, dst):
    """Convert an amount between currencies through EUR, rounded to dst's units."""
    if src.upper() == dst.upper():
        return round_amount(amount, dst)
    eur = amount * rate_to_eur(src)
    return round_amount(eur / rate_to_eur(dst), dst)


def format_amount(value, currency="EUR"):
    """Format an amount with thousands separators and its currency: -1,234.50 EUR."""
    value = round_amount(value, currency)
    sign = "-" if value < 0 else ""
    text = "{:,.{}f}".format(abs(value), minor_units(currency))
    return "%s%s %s" % (sign, text, currency.upper())


# --- Dates -------------------------------------------------------------------

def is_leap(year):
    """Gregorian leap year: every 4th, except centuries not divisible by 400."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year, month):
    """Days in a month of a year (February by is_leap)."""
    if month == 2:
        return 29 if is_leap(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def parse_date(text):
    """Parse YYYY-MM-DD (or YYYY-M-D, as one bank writes it) into (y, m, d)."""
    parts = text.strip().split("-")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise LedgerError("not a date: %r" % text)
    y, m, d = (int(p) for p in parts)
    if not 1 <= m <= 12:
        raise LedgerError("month out of range: %r" % text)
    if not 1 <= d <= days_in_month(y, m):
        raise LedgerError("day out of range: %r" % text)
    return y, m, d


def iso_date(text):
    """A date in the zero-padded form YYYY-MM-DD, whatever the export wrote."""
    return "%04d-%02d-%02d" % parse_date(text)


def month_key(text):
    """The month of a date as YYYY-MM, for grouping and sorting."""
    y, m, _ = parse_date(text)
    return "%d-%d" % (y, m)


def quarter_key(text):
    """The quarter of a date as YYYY-Qn."""
    y, m, _ = parse_date(text)
    return "%04d-Q%d" % (y, (m - 1) // 3 + 1)


# --- CSV ---------------------------------------------------------------------

def split_csv_line(line, sep=","):
    """Split one CSV line into fields.

    A field may be quoted with double quotes, in which case it may hold the
    separator, and a doubled quote inside stands for one quote.  Blanks
    around unquoted fields are kept: the exports do not pad.
    """
    fields = []
    field = []
    quoted = False
    i = 0
    n = len(line)
    while i < n:
        c = line[i]
        if c == sep:
            fields.append("".join(field))
            field = []
        elif c == '"':
            if quoted and i + 1 < n and line[i + 1] == '"':
                field.append('"')
                i += 1
            else:
                quoted = not quoted
        else:
            field.append(c)
        i += 1
    if quoted:
        raise LedgerError("unterminated quote in %r" % line)
    fields.append("".join(field))
    return fields


def format_csv_field(value, sep=","):
    """Quote a field for CSV if it holds the separator, a quote or a newline."""
    text = str(value)
    if sep in text or '"' in text or "\n" in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def format_record(record, sep=","):
    """A Record as one CSV line (the inverse of parse_record, up to normalisation)."""
    return sep.join(format_csv_field(getattr(record, f), sep) for f in FIELDS)


def normalise_payee(raw):
    """The name a payee is filed under: PAYEE_ALIASES, else the raw name capitalised."""
    key = " ".join(raw.split()).upper()
    if key in PAYEE_ALIASES:
        return PAYEE_ALIASES[key]
    return " ".join(w.capitalize() for w in key.split())


def guess_category(payee):
    """The category of the first CATEGORY_RULES keyword in the payee, or 'other'."""
    upper = payee.upper()
    for keyword, category in CATEGORY_RULES:
        if keyword in upper:
            return category
    return "other"


def parse_record(line):
    """Parse one CSV line of an export into a Record.

    An empty category is guessed from the raw payee (guess_category), and the
    payee is then normalised (normalise_payee); an empty currency is EUR.
    """
    fields = split_csv_line(line.rstrip("\r\n"))
    if len(fields) != len(FIELDS):
        raise LedgerError("expected 6 fields (date,payee,amount,currency,category,memo), got %d in line %r" % (len(fields), line))
    date, payee, amount, currency, category, memo = fields
    currency = currency.strip().upper() or "EUR"
    minor_units(currency)
    category = category.strip() or guess_category(payee)
    return Record(iso_date(date), normalise_payee(payee), parse_amount(amount),
                  currency, category, memo.strip())


def parse_lines(lines):
    """Parse the lines of an export; skips the header, blank lines and # comments."""
    records = []
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if text.lower().startswith("date,payee,"):
            continue
        try:
            records.append(parse_record(line))
        except LedgerError as e:
            raise LedgerError("line %d: %s" % (number, e)) from None
    return records


# --- Summaries ---------------------------------------------------------------

def totals_by(records, key, currency="EUR"):
    """Sum of the amounts (converted to currency) per key(record), sorted by key."""
    totals = {}
    for r in records:
        k = key(r)
        totals[k] = totals.get(k, Decimal(0)) + convert(r.amount, r.currency, currency)
    return dict(sorted(totals.items()))


def monthly_totals(records, currency="EUR"):
    """Totals per month (YYYY-MM), in currency."""
    return totals_by(records, lambda r: month_key(r.date), currency)


def quarterly_totals(records, currency="EUR"):
    """Totals per quarter (YYYY-Qn), in currency."""
    return totals_by(records, lambda r: quarter_key(r.date), currency)


def category_totals(records, currency="EUR"):
    """Totals per category, in currency."""
    return totals_by(records, lambda r: r.category, currency)


def balance(records, currency="EUR"):
    """The sum of all amounts, converted to currency."""
    total = Decimal(0)
    for r in records:
        total += convert(r.amount, r.currency, currency)
    return round_amount(total, currency)


def mean_amount(records):
    """The mean amount of the records, in their (common) currency, rounded."""
    if not records:
        raise LedgerError("mean of no records")
    total = sum((r.amount for r in records), Decimal(0))
    return round_amount(total // len(records), records[0].currency)


def largest(records, n=5, currency="EUR"):
    """The n records of largest absolute amount (in currency), largest first."""
    return sorted(records, key=lambda r: -abs(convert(r.amount, r.currency, currency)))[:n]


def running_balance(records, currency="EUR", start=Decimal(0)):
    """(record, balance after it) for each record, in date order."""
    out = []
    total = start
    for r in sorted(records, key=lambda r: r.date):
        total += convert(r.amount, r.currency, currency)
        out.append((r, total))
    return out


def filter_records(records, since=None, until=None, category=None, payee_contains=None):
    """The records within [since, until] (ISO dates), of a category, naming a payee."""
    out = []
    for r in records:
        if since is not None and r.date < since:
            continue
        if until is not None and r.date > until:
            continue
        if category is not None and r.category != category:
            continue
        if payee_contains is not None and payee_contains.lower() not in r.payee.lower():
            continue
        out.append(r)
    return out


def dedupe(records):
    seen = set()
    out = []
    for r in records:
        if r.key() in seen:
            continue
        seen.add(r.key())
        out.append(r)
    return out


def format_table(headers, rows):
    """Rows as a plain-text table under a header and a rule; numbers right-aligned."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, c in enumerate(row):
            widths[i] = max(widths[i], len(c))

    def line(row):
        out = []
        for i, c in enumerate(row):
            numeric = c[:1] in "-0123456789" and c[-1:].isalnum()
            out.append(c.rjust(widths[i]) if numeric and i else c.ljust(widths[i]))
        return "  ".join(out).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule] + [line(r) for r in cells])


def report(records, currency="EUR", top=5):
    """The monthly report: counts, balance, totals per month and category, largest items."""
    parts = [
        "Records: %d" % len(records),
        "Balance: %s" % format_amount(balance(records, currency), currency),
        "",
        "By month",
        format_table(["month", "total"], [
            (k, format_amount(v, currency)) for k, v in monthly_totals(records, currency).items()
        ]),
        "",
        "By category",
        format_table(["category", "total"], [
            (k, format_amount(v, currency)) for k, v in category_totals(records, currency).items()
        ]),
        "",
        "Largest",
        format_table(["date", "payee", "amount"], [
            (r.date, r.payee, format_amount(r.amount, r.currency)) for r in largest(records, top)
        ]),
    ]
    return "\n".join(parts)


# --- Validators --------------------------------------------------------------
# One per field of the account master data. Each returns the value normalised
# (blanks removed, upper-cased) or raises LedgerError.
# TODO(ledger): check the IBAN's mod-97 checksum, not only its shape.

def _match(value, prefix, kind, low, high):
    """Whether value is low..high long, starts with the prefix pattern (A: a
    letter, 9: a digit) and then holds only kind characters (digits, alnum)."""
    if not low <= len(value) <= high:
        return False
    for pattern, c in zip(prefix, value):
        if pattern == "A" and not c.isalpha():
            return False
        if pattern == "9" and not c.isdigit():
            return False
    rest = value[len(prefix):]
    return not rest or (rest.isdigit() if kind == "digits" else rest.isalnum())


${validators}`;
}

// --- py/test_ledger.py -------------------------------------------------------

function testLedgerPy(): string {
  const vtests = VALIDATORS.map(([name, , , , , , drop, ok, bad]) =>
    L(
      `    def test_${name}_accepts(self):`,
      `        """validate_${name} accepts ${JSON.stringify(ok)}."""`,
      `        got = ledger.validate_${name}(${JSON.stringify(ok)})`,
      `        self.assertEqual(got, ${JSON.stringify(normalised(ok, drop))})`,
      ``,
      `    def test_${name}_rejects(self):`,
      `        """validate_${name} rejects ${JSON.stringify(bad)}."""`,
      `        with self.assertRaises(LedgerError):`,
      `            ledger.validate_${name}(${JSON.stringify(bad)})`,
    ),
  ).join("\n");
  return String.raw`"""Tests of ledger.py: cd py && python3 -m unittest -v test_ledger"""

import unittest
from decimal import Decimal as D

import ledger
from ledger import LedgerError, Record

SAMPLE = [
    "date,payee,amount,currency,category,memo",
    "2024-01-03,ACME GROCERIES 0043,-54.20,EUR,,weekly shop",
    "# exported by the bank, edited by hand",
    "",
    '2024-01-05,ACME CORP PAYROLL,"3,250.00",EUR,,January salary',
    "2024-1-9,NETFLIX.COM,-12.99,EUR,subscriptions,",
    "2024-02-11,GITHUB INC,-4.00,usd,,",
]


def make_records():
    """Six records over three months, one of them in USD."""
    return [
        Record("2024-01-03", "Acme Groceries", D("-54.20"), "EUR", "groceries"),
        Record("2024-01-05", "Acme Corp (salary)", D("3250.00"), "EUR", "income"),
        Record("2024-02-11", "GitHub", D("-4.00"), "USD", "subscriptions"),
        Record("2024-02-14", "Pizzeria Napoli", D("-38.50"), "EUR", "eating out"),
        Record("2024-03-01", "Meier (rent)", D("-950.00"), "EUR", "rent"),
        Record("2024-03-02", "Acme Groceries", D("-61.35"), "EUR", "groceries"),
    ]


class TestParseAmount(unittest.TestCase):
    """parse_amount: the forms the bank exports use."""

    def test_plain(self):
        """A plain decimal amount."""
        self.assertEqual(ledger.parse_amount("12.50"), D("12.50"))

    def test_negative(self):
        """A leading minus."""
        self.assertEqual(ledger.parse_amount("-3.20"), D("-3.20"))

    def test_plus(self):
        """A leading plus and no decimals."""
        self.assertEqual(ledger.parse_amount("+7"), D("7"))

    def test_thousands(self):
        """Thousands separators are dropped."""
        self.assertEqual(ledger.parse_amount("1,234.56"), D("1234.56"))

    def test_trailing_currency(self):
        """A trailing currency code is ignored."""
        self.assertEqual(ledger.parse_amount("12.50 EUR"), D("12.50"))

    def test_whitespace(self):
        """Surrounding blanks are ignored."""
        self.assertEqual(ledger.parse_amount("  4.00 "), D("4.00"))

    def test_parentheses_negative(self):
        """(12.50) is the accountants' way of writing -12.50."""
        self.assertEqual(ledger.parse_amount("(12.50)"), D("-12.50"))

    def test_parentheses_with_thousands(self):
        """Parentheses and thousands separators together."""
        self.assertEqual(ledger.parse_amount("(1,000.00)"), D("-1000.00"))

    def test_empty_raises(self):
        """An empty field is not an amount."""
        with self.assertRaises(LedgerError):
            ledger.parse_amount("   ")

    def test_garbage_raises(self):
        """Words are not amounts."""
        with self.assertRaises(LedgerError):
            ledger.parse_amount("twelve")


class TestRounding(unittest.TestCase):
    """round_amount, minor_units and format_amount."""

    def test_half_even_down(self):
        """2.345 rounds to 2.34 (half to even)."""
        self.assertEqual(ledger.round_amount(D("2.345")), D("2.34"))

    def test_half_even_up(self):
        """2.355 rounds to 2.36 (half to even)."""
        self.assertEqual(ledger.round_amount(D("2.355")), D("2.36"))

    def test_yen_has_no_decimals(self):
        """JPY has no minor units."""
        self.assertEqual(ledger.round_amount(D("1234.5"), "JPY"), D("1234"))

    def test_dinar_has_three(self):
        """KWD has three decimals."""
        self.assertEqual(ledger.round_amount(D("1.2345"), "KWD"), D("1.234"))

    def test_minor_units_any_case(self):
        """Currency codes are looked up in any case."""
        self.assertEqual(ledger.minor_units("jpy"), 0)

    def test_unknown_currency(self):
        """An unknown code raises."""
        with self.assertRaises(LedgerError):
            ledger.minor_units("XXX")

    def test_format_negative(self):
        """format_amount: sign, separators, two decimals, code."""
        self.assertEqual(ledger.format_amount(D("-1234.5")), "-1,234.50 EUR")

    def test_format_yen(self):
        """format_amount: no decimals for JPY."""
        self.assertEqual(ledger.format_amount(D("1234567"), "JPY"), "1,234,567 JPY")


class TestConvert(unittest.TestCase):
    """convert: through EUR, rounded to the target's minor units."""

    def test_same_currency(self):
        """No conversion, only rounding."""
        self.assertEqual(ledger.convert(D("10.005"), "EUR", "EUR"), D("10.00"))

    def test_usd_to_eur(self):
        """100 USD at 0.9210."""
        self.assertEqual(ledger.convert(D("100"), "USD", "EUR"), D("92.10"))

    def test_eur_to_usd(self):
        """100 EUR at 1/0.9210."""
        self.assertEqual(ledger.convert(D("100"), "EUR", "USD"), D("108.58"))

    def test_jpy_no_decimals(self):
        """61.50 EUR is 10000 JPY."""
        self.assertEqual(ledger.convert(D("61.50"), "EUR", "JPY"), D("10000"))

    def test_kwd_three_decimals(self):
        """100 EUR in KWD, to the fils."""
        self.assertEqual(ledger.convert(D("100"), "EUR", "KWD"), D("33.311"))

    def test_lowercase_codes(self):
        """Codes in lower case, as one export writes them."""
        self.assertEqual(ledger.convert(D("100"), "usd", "eur"), D("92.10"))

    def test_roundtrip_lowercase(self):
        """EUR to GBP and back, in lower case."""
        there = ledger.convert(D("100"), "eur", "gbp")
        self.assertEqual(ledger.convert(there, "gbp", "eur"), D("100.00"))

    def test_unknown_raises(self):
        """An unknown code raises LedgerError, not KeyError."""
        with self.assertRaises(LedgerError):
            ledger.convert(D("1"), "EUR", "XYZ")


class TestSplitCsv(unittest.TestCase):
    """split_csv_line: quoting as the exports do it."""

    def test_plain(self):
        """Unquoted fields."""
        self.assertEqual(ledger.split_csv_line("a,b,c"), ["a", "b", "c"])

    def test_empty_fields(self):
        """Empty fields are kept."""
        self.assertEqual(ledger.split_csv_line("a,,c,"), ["a", "", "c", ""])

    def test_quoted(self):
        """A quoted field without separators."""
        self.assertEqual(ledger.split_csv_line('a,"b",c'), ["a", "b", "c"])

    def test_quoted_comma(self):
        """A quoted field holding the separator."""
        self.assertEqual(ledger.split_csv_line('a,"b,c",d'), ["a", "b,c", "d"])

    def test_escaped_quote(self):
        """A doubled quote inside a quoted field."""
        got = ledger.split_csv_line('x,"say ""hi"", then go",y')
        self.assertEqual(got, ["x", 'say "hi", then go', "y"])

    def test_blanks_kept(self):
        """Blanks around unquoted fields are kept."""
        self.assertEqual(ledger.split_csv_line(" a , b"), [" a ", " b"])

    def test_semicolon_sep(self):
        """Another separator."""
        self.assertEqual(ledger.split_csv_line("1;2;3", sep=";"), ["1", "2", "3"])

    def test_quoted_semicolon(self):
        """A quoted field holding another separator."""
        got = ledger.split_csv_line('1;"2;5";3', sep=";")
        self.assertEqual(got, ["1", "2;5", "3"])

    def test_unterminated_quote(self):
        """An unterminated quote raises."""
        with self.assertRaises(LedgerError):
            ledger.split_csv_line('a,"b')


class TestDates(unittest.TestCase):
    """parse_date, iso_date, month_key and quarter_key."""

    def test_parse(self):
        """A padded date."""
        self.assertEqual(ledger.parse_date("2024-02-29"), (2024, 2, 29))

    def test_parse_unpadded(self):
        """An unpadded date."""
        self.assertEqual(ledger.parse_date("2024-3-7"), (2024, 3, 7))

    def test_not_leap(self):
        """29 February 2023 does not exist."""
        with self.assertRaises(LedgerError):
            ledger.parse_date("2023-02-29")

    def test_bad_month(self):
        """Month 13 does not exist."""
        with self.assertRaises(LedgerError):
            ledger.parse_date("2024-13-01")

    def test_words(self):
        """Words are not dates."""
        with self.assertRaises(LedgerError):
            ledger.parse_date("yesterday")

    def test_century_leap(self):
        """2000 was a leap year, 1900 was not."""
        self.assertEqual((ledger.is_leap(2000), ledger.is_leap(1900)), (True, False))

    def test_iso_date(self):
        """iso_date pads."""
        self.assertEqual(ledger.iso_date("2024-3-7"), "2024-03-07")

    def test_month_key_padded(self):
        """month_key of a padded date."""
        self.assertEqual(ledger.month_key("2024-11-05"), "2024-11")

    def test_month_key_single_digit(self):
        """month_key pads the month."""
        self.assertEqual(ledger.month_key("2024-3-7"), "2024-03")

    def test_month_key_sorts(self):
        """Month keys sort in date order."""
        keys = sorted(ledger.month_key(d) for d in ["2024-10-01", "2024-9-30", "2024-2-01"])
        self.assertEqual(keys, ["2024-02", "2024-09", "2024-10"])

    def test_quarter_key(self):
        """November is in the fourth quarter."""
        self.assertEqual(ledger.quarter_key("2024-11-30"), "2024-Q4")


class TestRecords(unittest.TestCase):
    """parse_record, parse_lines, format_record and the payee rules."""

    def test_parse_record(self):
        """A plain line; the category is guessed, the payee normalised."""
        got = ledger.parse_record("2024-01-03,ACME GROCERIES 0043,-54.20,EUR,,weekly shop")
        want = Record("2024-01-03", "Acme Groceries", D("-54.20"), "EUR", "groceries", "weekly shop")
        self.assertEqual(got, want)

    def test_parse_record_refund(self):
        """An amount in parentheses is negative."""
        got = ledger.parse_record("2024-01-08,AMZN MKTP DE,(23.99),EUR,,return shipping")
        self.assertEqual(got.amount, D("-23.99"))

    def test_parse_record_quoted_payee(self):
        """A quoted payee and memo holding commas."""
        line = '2024-02-01,"SMITH, JONES & CO",-450.00,EUR,,"invoice 2024-17, January"'
        got = ledger.parse_record(line)
        self.assertEqual((got.payee, got.category), ("Smith, Jones & Co", "professional"))
        self.assertEqual(got.memo, "invoice 2024-17, January")

    def test_parse_record_unpadded_date(self):
        """Dates are stored padded."""
        got = ledger.parse_record("2024-3-7,DM DROGERIE,-23.15,EUR,,")
        self.assertEqual(got.date, "2024-03-07")

    def test_parse_record_lowercase_currency(self):
        """Currency codes are upper-cased."""
        self.assertEqual(ledger.parse_record("2024-02-11,GITHUB INC,-4.00,usd,,").currency, "USD")

    def test_parse_record_field_count(self):
        """Too few fields raise."""
        with self.assertRaises(LedgerError):
            ledger.parse_record("2024-01-03,ACME,-1.00")

    def test_parse_lines(self):
        """Header, comments and blank lines are skipped."""
        records = ledger.parse_lines(SAMPLE)
        self.assertEqual([r.payee for r in records],
                         ["Acme Groceries", "Acme Corp (salary)", "Netflix", "GitHub"])
        self.assertEqual(records[1].amount, D("3250.00"))

    def test_parse_lines_names_the_line(self):
        """An error names the line number."""
        with self.assertRaisesRegex(LedgerError, "line 2"):
            ledger.parse_lines(["date,payee,amount,currency,category,memo", "bad"])

    def test_format_record_roundtrip(self):
        """format_record quotes what needs quoting, and parses back."""
        r = Record("2024-02-01", "Smith, Jones & Co", D("-450.00"), "EUR", "professional", "x")
        self.assertEqual(ledger.parse_record(ledger.format_record(r)), r)

    def test_normalise_alias(self):
        """Known payees get their filing name, blanks and case aside."""
        self.assertEqual(ledger.normalise_payee("acme  groceries 0043"), "Acme Groceries")

    def test_normalise_unknown(self):
        """Unknown payees are capitalised."""
        self.assertEqual(ledger.normalise_payee("some shop gmbh"), "Some Shop Gmbh")

    def test_guess_category(self):
        """The first matching rule wins."""
        self.assertEqual(ledger.guess_category("NETFLIX.COM"), "subscriptions")

    def test_guess_other(self):
        """No rule: other."""
        self.assertEqual(ledger.guess_category("KIOSK 24"), "other")


class TestSummaries(unittest.TestCase):
    """Totals, balance, mean, largest, running balance, filters and the report."""

    def setUp(self):
        self.records = make_records()

    def test_category_totals(self):
        """Per category, USD converted to EUR."""
        got = ledger.category_totals(self.records)
        self.assertEqual(list(got), ["eating out", "groceries", "income", "rent", "subscriptions"])
        self.assertEqual(got["groceries"], D("-115.55"))
        self.assertEqual(got["subscriptions"], D("-3.68"))

    def test_monthly_totals(self):
        """Per month, keyed YYYY-MM."""
        got = ledger.monthly_totals(self.records)
        self.assertEqual(list(got), ["2024-01", "2024-02", "2024-03"])
        self.assertEqual(got["2024-03"], D("-1011.35"))

    def test_quarterly_totals(self):
        """All in the first quarter."""
        self.assertEqual(list(ledger.quarterly_totals(self.records)), ["2024-Q1"])

    def test_balance(self):
        """The sum of everything, in EUR."""
        self.assertEqual(ledger.balance(self.records), D("2142.27"))

    def test_mean_amount(self):
        """The mean, not rounded down to whole euros."""
        records = [Record("2024-01-0%d" % i, "x", D(a)) for i, a in
                   enumerate(["10.00", "10.50", "10.25"], 1)]
        self.assertEqual(ledger.mean_amount(records), D("10.25"))

    def test_mean_of_nothing(self):
        """No records, no mean."""
        with self.assertRaises(LedgerError):
            ledger.mean_amount([])

    def test_largest(self):
        """The two largest by absolute amount."""
        got = ledger.largest(self.records, 2)
        self.assertEqual([r.payee for r in got], ["Acme Corp (salary)", "Meier (rent)"])

    def test_running_balance(self):
        """The running balance ends at the balance."""
        self.assertEqual(ledger.running_balance(self.records)[-1][1], D("2142.27"))

    def test_filter_category(self):
        """Filter by category."""
        self.assertEqual(len(ledger.filter_records(self.records, category="groceries")), 2)

    def test_filter_dates(self):
        """Filter by date range."""
        got = ledger.filter_records(self.records, since="2024-02-01", until="2024-02-28")
        self.assertEqual([r.payee for r in got], ["GitHub", "Pizzeria Napoli"])

    def test_dedupe(self):
        """Duplicates are dropped, the first kept."""
        self.assertEqual(len(ledger.dedupe(self.records + self.records[:2])), 6)

    def test_report(self):
        """The report names the balance and each month."""
        text = ledger.report(self.records)
        self.assertIn("Balance: 2,142.27 EUR", text)
        self.assertIn("2024-03", text)


class TestValidators(unittest.TestCase):
    """The account master data validators: one valid and one invalid value each."""

${vtests}

if __name__ == "__main__":
    unittest.main()
`;
}

// --- py/report.py ------------------------------------------------------------

const reportPy = String.raw`"""The monthly report of a ledger export.

    python3 py/report.py FILE [--category NAME]
"""

import sys

import ledger


def main(argv):
    """Print the report of the export named in argv; 2 on a usage error."""
    args = list(argv)
    category = None
    if "--category" in args:
        i = args.index("--category")
        category = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(args[0], encoding="utf-8") as fh:
        records = ledger.parse_lines(fh)
    if category is not None:
        records = ledger.filter_records(records, category=category)
    print(ledger.report(records))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
`;

// --- data/statements.csv -----------------------------------------------------

function statementsCsv(): string {
  const r = rng(20240101);
  const lines = ["date,payee,amount,currency,category,memo"];
  const memos = ["", "", "", "card payment", "standing order", "online", "direct debit", "see receipt"];
  for (let month = 1; month <= 12; month++) {
    const days = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
    const n = 18 + r(6);
    const rows: [number, string][] = [];
    for (let k = 0; k < n; k++) {
      const p = k === 0 ? PAYEES[PAYEES.length - 1] : k === 1 ? PAYEES[23] : PAYEES[r(PAYEES.length - 2)];
      const day = k === 0 ? 28 : k === 1 ? 1 : 1 + r(days);
      const cents = Math.round(p[3] * (0.7 + r(61) / 100));
      const abs = Math.abs(cents);
      let amount = `${cents < 0 ? "-" : ""}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")}`;
      if (abs >= 100000) amount = `"${cents < 0 ? "-" : ""}${Math.floor(abs / 100000)},${String(Math.floor(abs / 100) % 1000).padStart(3, "0")}.${String(abs % 100).padStart(2, "0")}"`;
      const date = p[0].startsWith("DB ") ? `2024-${month}-${day}` : `2024-${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}`;
      const payee = p[0].includes(",") ? `"${p[0]}"` : p[0];
      const cat = r(4) === 0 ? p[2] : "";
      rows.push([day * 100 + k, `${date},${payee},${amount},${p[4]},${cat},${memos[r(memos.length)]}`]);
    }
    rows.sort((a, b) => a[0] - b[0]);
    lines.push(...rows.map((x) => x[1]));
  }
  return lines.join("\n") + "\n";
}

// --- csrc ----------------------------------------------------------------------

const utilH = String.raw`/*
 * util.h - string and number helpers shared by the import tools.
 *
 * Nothing here allocates. Functions that write into a caller's buffer take
 * its capacity and always NUL-terminate.
 */
#ifndef UTIL_H
#define UTIL_H

#include <stddef.h>
#include <stdint.h>

/* strutil.c */
char *str_trim(char *s);
char *str_lower(char *s);
char *str_upper(char *s);
int str_starts_with(const char *s, const char *prefix);
int str_ends_with(const char *s, const char *suffix);
size_t str_count_char(const char *s, char c);
char *str_replace_char(char *s, char from, char to);
char *str_reverse(char *s);
int str_is_blank(const char *s);
char *str_pad_left(char *dst, size_t cap, const char *s, size_t width, char fill);
size_t str_split_count(const char *s, char sep);
int str_field(const char *s, char sep, size_t n, char *out, size_t cap);
unsigned long str_hash_djb2(const char *s);
char *str_collapse_spaces(char *s);
int str_to_long(const char *s, long *out);
size_t str_common_prefix(const char *a, const char *b);
size_t str_levenshtein(const char *a, const char *b);
int str_is_identifier(const char *s);
size_t str_escape_json(char *dst, size_t cap, const char *s);
size_t str_word_count(const char *s);

/* mathutil.c */
long clamp_long(long v, long lo, long hi);
long gcd_long(long a, long b);
long lcm_long(long a, long b);
long ipow(long base, unsigned exp);
int is_prime(unsigned long n);
unsigned long isqrt(unsigned long n);
uint32_t adler32(const void *data, size_t len);
uint8_t crc8(const void *data, size_t len);
unsigned long fib(unsigned n);
int digit_sum(long n);
int popcount32(uint32_t x);
long round_div(long a, long b);
long median_long(long *xs, size_t n);
long bsearch_long(const long *xs, size_t n, long key);
uint32_t gray_encode(uint32_t x);
uint32_t gray_decode(uint32_t g);
int luhn_valid(const char *digits);

#endif /* UTIL_H */
`;

const strutilC = String.raw`/*
 * strutil.c - small string helpers for the import tools.
 *
 * All functions work on NUL-terminated byte strings and never allocate;
 * those that write take the destination's capacity and always terminate.
 * Character classes are ASCII (the exports are ASCII after transliteration).
 */
#include <ctype.h>
#include <limits.h>
#include <string.h>

#include "util.h"

/*
 * Trim leading and trailing whitespace in place.
 * Returns s, which now starts with the first non-blank character.
 */
char *str_trim(char *s)
{
    size_t start = 0, end = strlen(s);

    while (s[start] && isspace((unsigned char)s[start]))
        start++;
    while (end > start && isspace((unsigned char)s[end]))
        end--;
    memmove(s, s + start, end - start);
    s[end - start] = '\0';
    return s;
}

/* Lower-case s in place; returns s. */
char *str_lower(char *s)
{
    for (char *p = s; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return s;
}

/* Upper-case s in place; returns s. */
char *str_upper(char *s)
{
    for (char *p = s; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    return s;
}

/* Whether s starts with prefix (every string starts with ""). */
int str_starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Whether s ends with suffix (every string ends with ""). */
int str_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);

    return m <= n && strcmp(s + n - m, suffix) == 0;
}

/* How many times c occurs in s. */
size_t str_count_char(const char *s, char c)
{
    size_t count = 0;
    int last = -1;

    for (; *s; s++)
        if (*s == c)
            count++;
    return count;
}

/* Replace every from by to, in place; returns s. */
char *str_replace_char(char *s, char from, char to)
{
    for (char *p = s; *p; p++)
        if (*p == from)
            *p = to;
    return s;
}

/* Reverse s in place; returns s. */
char *str_reverse(char *s)
{
    size_t n = strlen(s);

    for (size_t i = 0; i < n / 2; i++) {
        char t = s[i];
        s[i] = s[n - 1 - i];
        s[n - 1 - i] = t;
    }
    return s;
}

/* Whether s is empty or only whitespace. */
int str_is_blank(const char *s)
{
    for (; *s; s++)
        if (!isspace((unsigned char)*s))
            return 0;
    return 1;
}

/*
 * Right-align s in a field of width characters, padded on the left with
 * fill, into dst of capacity cap. A string longer than width is copied
 * whole (as far as cap allows). Returns dst.
 */
char *str_pad_left(char *dst, size_t cap, const char *s, size_t width, char fill)
{
    size_t n = strlen(s), pad = n < width ? width - n - 1 : 0, i = 0;

    if (cap == 0)
        return dst;
    while (i < pad && i + 1 < cap)
        dst[i++] = fill;
    for (size_t j = 0; j < n && i + 1 < cap; j++)
        dst[i++] = s[j];
    dst[i] = '\0';
    return dst;
}

/* Number of fields of s split at sep (an empty string has one field). */
size_t str_split_count(const char *s, char sep)
{
    return str_count_char(s, sep) + 1;
}

/*
 * Copy field n (from 0) of s split at sep into out (capacity cap).
 * Returns 0, or -1 if s has no field n (out is then empty).
 */
int str_field(const char *s, char sep, size_t n, char *out, size_t cap)
{
    const char *start = s;
    size_t len, k = 0;

    if (cap == 0)
        return -1;
    out[0] = '\0';
    while (k < n) {
        const char *next = strchr(start, sep);
        if (!next)
            return -1;
        start = next + 1;
        k++;
    }
    len = strcspn(start, (char[]){sep, '\0'});
    if (len >= cap)
        len = cap - 1;
    memcpy(out, start, len);
    out[len] = '\0';
    return 0;
}

/* Bernstein's djb2 hash (h * 33 + c), as the cache keys use it. */
unsigned long str_hash_djb2(const char *s)
{
    unsigned long h = 5381;

    for (; *s; s++)
        h = h * 33 + (unsigned char)*s;
    return h;
}

/* Replace each run of whitespace by one space, in place; returns s. */
char *str_collapse_spaces(char *s)
{
    char *w = s;
    int in_space = 0;

    for (const char *r = s; *r; r++) {
        if (isspace((unsigned char)*r)) {
            if (!in_space)
                *w++ = ' ';
            in_space = 1;
        } else {
            *w++ = *r;
            in_space = 0;
        }
    }
    *w = '\0';
    return s;
}

/*
 * Parse s as a whole decimal long (optional sign, no blanks, no trailing
 * characters). Returns 0 and sets *out, or -1 (out of range or not a number).
 */
int str_to_long(const char *s, long *out)
{
    long v = 0;
    int neg = 0;

    if (*s == '-' || *s == '+')
        neg = *s++ == '-';
    if (!isdigit((unsigned char)*s))
        return -1;
    for (; isdigit((unsigned char)*s); s++) {
        int d = *s - '0';
        if (v > (LONG_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (*s)
        return -1;
    *out = neg ? -v : v;
    return 0;
}

/* Length of the longest common prefix of a and b. */
size_t str_common_prefix(const char *a, const char *b)
{
    size_t n = 0;

    while (a[n] && a[n] == b[n])
        n++;
    return n;
}

/*
 * Levenshtein distance of a and b, for strings of up to 63 characters
 * (longer ones are compared on their first 63). Two rows of the matrix.
 */
size_t str_levenshtein(const char *a, const char *b)
{
    size_t prev[64], cur[64];
    size_t n = strlen(a), m = strlen(b);

    if (n > 63)
        n = 63;
    if (m > 63)
        m = 63;
    for (size_t j = 0; j <= m; j++)
        prev[j] = j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t best = del < ins ? del : ins;
            cur[j] = best < sub ? best : sub;
        }
        memcpy(prev, cur, (m + 1) * sizeof prev[0]);
    }
    return prev[m];
}

/* Whether s is a C identifier: a letter or _, then letters, digits or _. */
int str_is_identifier(const char *s)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return 0;
    return 1;
}

/*
 * Escape s for a JSON string (quotes, backslashes, control characters) into
 * dst of capacity cap. Returns the length the escaped string needs, which
 * may exceed what was written (like snprintf).
 */
size_t str_escape_json(char *dst, size_t cap, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;

#define PUT(c) do { if (n + 1 < cap) dst[n] = (c); n++; } while (0)
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            PUT('\\');
            PUT((char)c);
        } else if (c == '\n') {
            PUT('\\');
            PUT('n');
        } else if (c == '\t') {
            PUT('\\');
            PUT('t');
        } else if (c < 0x20) {
            PUT('\\');
            PUT('u');
            PUT('0');
            PUT('0');
            PUT(hex[c >> 4]);
            PUT(hex[c & 15]);
        } else {
            PUT((char)c);
        }
    }
#undef PUT
    if (cap)
        dst[n < cap ? n : cap - 1] = '\0';
    return n;
}

/* Number of words (runs of non-blank characters) in s. */
size_t str_word_count(const char *s)
{
    size_t words = 0;
    int in_word = 0;

    for (; *s; s++) {
        if (isspace((unsigned char)*s)) {
            in_word = 0;
        } else if (!in_word) {
            words++;
            in_word = 1;
        }
    }
    return words;
}
`;

const mathutilC = String.raw`/*
 * mathutil.c - integer helpers: clamping, gcd, powers, primes, checksums.
 *
 * The checksums are the ones the file formats we import specify: Adler-32
 * (zlib's) for the archive members and CRC-8 (polynomial 0x07) for the
 * record trailers.
 */
#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* The largest prime below 2^16, Adler-32's modulus. */
#define MOD_ADLER 65535u

/* v limited to [lo, hi]. */
long clamp_long(long v, long lo, long hi)
{
    if (v < lo)
        return lo;
    if (v > hi)
        return lo;
    return v;
}

/* Greatest common divisor, always >= 0; gcd(0, 0) is 0. */
long gcd_long(long a, long b)
{
    if (a < 0)
        a = -a;
    if (b < 0)
        b = -b;
    while (b) {
        long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Least common multiple, always >= 0; 0 if either is 0. */
long lcm_long(long a, long b)
{
    if (a == 0 || b == 0)
        return 0;
    long l = a / gcd_long(a, b) * b;
    return l < 0 ? -l : l;
}

/* base to the power exp, by squaring (overflow is the caller's problem). */
long ipow(long base, unsigned exp)
{
    long result = 1;

    while (exp) {
        if (exp & 1)
            result *= base;
        base *= base;
        exp >>= 1;
    }
    return result;
}

/* Whether n is prime, by trial division over 6k +- 1. */
int is_prime(unsigned long n)
{
    if (n < 2)
        return 0;
    if (n % 2 == 0)
        return n == 2;
    if (n % 3 == 0)
        return n == 3;
    for (unsigned long i = 5; i <= n / i; i += 6)
        if (n % i == 0 || n % (i + 2) == 0)
            return 0;
    return 1;
}

/* Floor of the square root of n (Newton's method on integers). */
unsigned long isqrt(unsigned long n)
{
    unsigned long x = n, y;

    if (n < 2)
        return n;
    y = (x + n / x) / 2;
    while (y < x) {
        x = y;
        y = (x + n / x) / 2;
    }
    return x;
}

/* Adler-32 of len bytes, as zlib computes it (initial value 1). */
uint32_t adler32(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint32_t a = 1, b = 0;

    for (size_t i = 0; i < len; i++) {
        a = (a + p[i]) % MOD_ADLER;
        b = (b + a) % MOD_ADLER;
    }
    return (b << 16) | a;
}

/* CRC-8 with polynomial 0x07, initial value 0, no reflection. */
uint8_t crc8(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint8_t crc = 0;

    for (size_t i = 0; i < len; i++) {
        crc ^= p[i];
        for (int bit = 0; bit < 8; bit++)
            crc = (uint8_t)(crc & 0x80 ? (crc << 1) ^ 0x07 : crc << 1);
    }
    return crc;
}

/* The n-th Fibonacci number, fib(0) = 0, iteratively. */
unsigned long fib(unsigned n)
{
    unsigned long a = 0, b = 1;

    while (n--) {
        unsigned long t = a + b;
        a = b;
        b = t;
    }
    return a;
}

/* Sum of the decimal digits of |n|. */
int digit_sum(long n)
{
    int s = 0;

    if (n < 0)
        n = -n;
    for (; n; n /= 10)
        s += (int)(n % 10);
    return s;
}

/* Number of bits set in x (Kernighan's loop). */
int popcount32(uint32_t x)
{
    int n = 0;

    for (; x; x &= x - 1)
        n++;
    return n;
}

/* a / b rounded to the nearest integer, halves away from zero. */
long round_div(long a, long b)
{
    if ((a < 0) == (b < 0))
        return (a + b / 2) / b;
    return (a - b / 2) / b;
}

/*
 * Median of n values (sorts xs in place, insertion sort: n is small here).
 * For an even n, the lower of the two middle values.
 */
long median_long(long *xs, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 1; i < n; i++) {
        long v = xs[i];
        size_t j = i;
        while (j > 0 && xs[j - 1] > v) {
            xs[j] = xs[j - 1];
            j--;
        }
        xs[j] = v;
    }
    return xs[(n - 1) / 2];
}

/* Index of key in the sorted xs, or -1. */
long bsearch_long(const long *xs, size_t n, long key)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (xs[mid] < key)
            lo = mid + 1;
        else if (xs[mid] > key)
            hi = mid;
        else
            return (long)mid;
    }
    return -1;
}

/* Reflected binary Gray code of x, and back. */
uint32_t gray_encode(uint32_t x)
{
    return x ^ (x >> 1);
}

uint32_t gray_decode(uint32_t g)
{
    uint32_t x = g;

    while (g >>= 1)
        x ^= g;
    return x;
}

/* Whether a card number (digits and blanks) passes the Luhn check. */
int luhn_valid(const char *digits)
{
    int sum = 0, count = 0;
    size_t n = 0;

    while (digits[n])
        n++;
    while (n--) {
        char c = digits[n];
        if (c == ' ')
            continue;
        if (c < '0' || c > '9')
            return 0;
        int d = c - '0';
        if (count++ % 2) {
            d *= 2;
            if (d > 9)
                d -= 9;
        }
        sum += d;
    }
    return count > 1 && sum % 10 == 0;
}
`;

function adler32Of(bytes: number[]): string {
  let a = 1;
  let b = 0;
  for (const x of bytes) {
    a = (a + x) % 65521;
    b = (b + a) % 65521;
  }
  return "0x" + (((b << 16) | a) >>> 0).toString(16).padStart(8, "0");
}

const TABLES = 72;
/** The generated table nn, as tools/gen_tables.py makes it. */
function tableValues(nn: number): number[] {
  const count = 16 + (nn % 17);
  return Array.from({ length: count }, (_, i) => (i * (nn + 3) + nn * 7) % 97);
}

function testUtilC(): string {
  const long = Array.from({ length: 5000 }, (_, i) => (i * 7 + 3) % 256);
  const t = (nn: number) => tableValues(nn).reduce((a, b) => a + b, 0);
  return String.raw`/*
 * test_util.c - the tests of libutil: make test (or build/test_util NAME...).
 *
 * Each check prints one line, "test <group>::<name> ... ok" or "... FAILED"
 * with what was expected; the summary line counts them.
 */
#include <stdio.h>
#include <string.h>

#include "util.h"
#include "tables.h"

static int total, failures;

static void report(const char *name, int ok, const char *file, int line, const char *detail)
{
    total++;
    if (ok) {
        printf("test %-36s ... ok\n", name);
        return;
    }
    failures++;
    printf("test %-36s ... FAILED\n    %s:%d: %s\n", name, file, line, detail);
}

static void check_long(const char *name, long got, long want, const char *file, int line)
{
    char detail[128];

    snprintf(detail, sizeof detail, "expected %ld, got %ld", want, got);
    report(name, got == want, file, line, detail);
}

static void check_str(const char *name, const char *got, const char *want, const char *file, int line)
{
    char detail[256];

    snprintf(detail, sizeof detail, "expected \"%s\", got \"%s\"", want, got);
    report(name, strcmp(got, want) == 0, file, line, detail);
}

#define CHECK_LONG(name, got, want) check_long(name, (long)(got), (long)(want), __FILE__, __LINE__)
#define CHECK_STR(name, got, want) check_str(name, got, want, __FILE__, __LINE__)

static void test_strutil(void)
{
    char buf[128];
    long v = 0;

    strcpy(buf, "  hello world \t\n");
    CHECK_STR("strutil::trim_both", str_trim(buf), "hello world");
    strcpy(buf, "tail   ");
    CHECK_STR("strutil::trim_trailing", str_trim(buf), "tail");
    strcpy(buf, "   ");
    CHECK_STR("strutil::trim_all_blank", str_trim(buf), "");
    strcpy(buf, "MiXeD Case");
    CHECK_STR("strutil::lower", str_lower(buf), "mixed case");
    CHECK_STR("strutil::upper", str_upper(buf), "MIXED CASE");
    CHECK_LONG("strutil::starts_with", str_starts_with("ledger.csv", "ledger"), 1);
    CHECK_LONG("strutil::ends_with", str_ends_with("ledger.csv", ".csv"), 1);
    CHECK_LONG("strutil::ends_with_longer", str_ends_with("csv", "ledger.csv"), 0);
    CHECK_LONG("strutil::count_char", str_count_char("a,b,,c", ','), 3);
    strcpy(buf, "2024/03/07");
    CHECK_STR("strutil::replace_char", str_replace_char(buf, '/', '-'), "2024-03-07");
    strcpy(buf, "stressed");
    CHECK_STR("strutil::reverse", str_reverse(buf), "desserts");
    CHECK_LONG("strutil::is_blank", str_is_blank(" \t\n"), 1);
    CHECK_LONG("strutil::is_blank_not", str_is_blank(" x "), 0);
    CHECK_STR("strutil::pad_zero", str_pad_left(buf, sizeof buf, "42", 5, '0'), "00042");
    CHECK_STR("strutil::pad_spaces", str_pad_left(buf, sizeof buf, "abc", 6, ' '), "   abc");
    CHECK_STR("strutil::pad_longer", str_pad_left(buf, sizeof buf, "abcdef", 3, ' '), "abcdef");
    CHECK_STR("strutil::pad_small_cap", str_pad_left(buf, 4, "7", 8, '0'), "000");
    CHECK_LONG("strutil::split_count", str_split_count("a;b;c", ';'), 3);
    CHECK_LONG("strutil::field", str_field("a;bb;c", ';', 1, buf, sizeof buf), 0);
    CHECK_STR("strutil::field_value", buf, "bb");
    CHECK_LONG("strutil::field_missing", str_field("a;b", ';', 5, buf, sizeof buf), -1);
    CHECK_LONG("strutil::djb2", (long)(str_hash_djb2("ledger") % 100000), ${String(djb2("ledger") % 100000n)});
    strcpy(buf, "a  b \t\n c");
    CHECK_STR("strutil::collapse", str_collapse_spaces(buf), "a b c");
    CHECK_LONG("strutil::to_long", str_to_long("-1234", &v), 0);
    CHECK_LONG("strutil::to_long_value", v, -1234);
    CHECK_LONG("strutil::to_long_trailing", str_to_long("12x", &v), -1);
    CHECK_LONG("strutil::to_long_overflow", str_to_long("99999999999999999999", &v), -1);
    CHECK_LONG("strutil::common_prefix", str_common_prefix("statement", "state"), 5);
    CHECK_LONG("strutil::levenshtein", str_levenshtein("kitten", "sitting"), 3);
    CHECK_LONG("strutil::levenshtein_empty", str_levenshtein("", "abc"), 3);
    CHECK_LONG("strutil::identifier", str_is_identifier("_total2"), 1);
    CHECK_LONG("strutil::identifier_digit", str_is_identifier("2total"), 0);
    CHECK_LONG("strutil::escape_json_len", str_escape_json(buf, sizeof buf, "a\"b\n"), 6);
    CHECK_STR("strutil::escape_json", buf, "a\\\"b\\n");
    CHECK_LONG("strutil::word_count", str_word_count("  one two\tthree  "), 3);
}

static void test_mathutil(void)
{
    static unsigned char block[5000];
    long xs[] = {9, 2, 7, 4, 5};
    long sorted[] = {1, 3, 5, 7, 9, 11};

    for (size_t i = 0; i < sizeof block; i++)
        block[i] = (unsigned char)((i * 7 + 3) % 256);
    CHECK_LONG("mathutil::clamp_inside", clamp_long(5, 0, 10), 5);
    CHECK_LONG("mathutil::clamp_low", clamp_long(-3, 0, 10), 0);
    CHECK_LONG("mathutil::clamp_high", clamp_long(42, 0, 10), 10);
    CHECK_LONG("mathutil::gcd", gcd_long(84, -36), 12);
    CHECK_LONG("mathutil::gcd_zero", gcd_long(0, 0), 0);
    CHECK_LONG("mathutil::lcm", lcm_long(4, 6), 12);
    CHECK_LONG("mathutil::ipow", ipow(3, 13), 1594323);
    CHECK_LONG("mathutil::is_prime_97", is_prime(97), 1);
    CHECK_LONG("mathutil::is_prime_91", is_prime(91), 0);
    CHECK_LONG("mathutil::isqrt", isqrt(1000000007ul), 31622);
    CHECK_LONG("mathutil::adler32_wikipedia", adler32("Wikipedia", 9), 0x11E60398);
    CHECK_LONG("mathutil::adler32_long_input", adler32(block, sizeof block), ${adler32Of(long)});
    CHECK_LONG("mathutil::crc8", crc8("123456789", 9), 0xF4);
    CHECK_LONG("mathutil::fib", fib(50), 12586269025l);
    CHECK_LONG("mathutil::digit_sum", digit_sum(-98765), 35);
    CHECK_LONG("mathutil::popcount", popcount32(0xF0F0F0F0u), 16);
    CHECK_LONG("mathutil::round_div_half", round_div(7, 2), 4);
    CHECK_LONG("mathutil::round_div_negative", round_div(-7, 2), -4);
    CHECK_LONG("mathutil::median", median_long(xs, 5), 5);
    CHECK_LONG("mathutil::bsearch_found", bsearch_long(sorted, 6, 9), 4);
    CHECK_LONG("mathutil::bsearch_missing", bsearch_long(sorted, 6, 4), -1);
    CHECK_LONG("mathutil::gray_roundtrip", gray_decode(gray_encode(123456)), 123456);
    CHECK_LONG("mathutil::luhn_valid", luhn_valid("4539 1488 0343 6467"), 1);
    CHECK_LONG("mathutil::luhn_invalid", luhn_valid("4539 1488 0343 6468"), 0);
}

static void test_tables(void)
{
    CHECK_LONG("tables::count", TABLE_COUNT, ${TABLES});
    CHECK_LONG("tables::table_00_first", table_00_value(0), ${tableValues(0)[0]});
    CHECK_LONG("tables::table_05_sum", table_05_sum(), ${t(5)});
    CHECK_LONG("tables::table_33_sum", table_33_sum(), ${t(33)});
    CHECK_LONG("tables::table_71_out_of_range", table_71_value(999), -1);
}

int main(void)
{
    test_strutil();
    test_mathutil();
    test_tables();
    printf("\n%d tests, %d passed, %d failed\n", total, total - failures, failures);
    return failures ? 1 : 0;
}
`;
}

function djb2(s: string): bigint {
  let h = 5381n;
  for (const c of Buffer.from(s)) h = (h * 33n + BigInt(c)) & 0xffffffffffffffffn;
  return h;
}

const genTablesPy = String.raw`"""Generate the lookup tables of libutil: gen/table_NN.c and gen/tables.h.

    python3 ../tools/gen_tables.py OUTDIR COUNT

Table NN holds 16 + NN % 17 values, value i being (i * (NN + 3) + NN * 7) % 97.
Every table gets a value(), a sum() and a scaled() accessor; scaled() honours
its flags argument except in the tables of the old layout (NN % 9 == 8),
whose flags are reserved.
"""

import os
import sys

SERIES = ["north", "south", "east", "west", "upper", "lower"]


def values(nn):
    """The values of table nn."""
    return [(i * (nn + 3) + nn * 7) % 97 for i in range(16 + nn % 17)]


def table_source(nn):
    """The C source of table nn."""
    vals = values(nn)
    rows = []
    for i in range(0, len(vals), 12):
        rows.append("    " + ", ".join("%2d" % v for v in vals[i:i + 12]) + ",")
    name = "table_%02d" % nn
    if nn % 9 == 8:
        scaled = ["int %s_scaled(int i, int flags)" % name, "{",
                  "    return %s_value(i) * %d;" % (name, nn + 1), "}"]
    else:
        scaled = ["int %s_scaled(int i, int flags)" % name, "{",
                  "    int v = %s_value(i) * %d;" % (name, nn + 1), "",
                  "    return (flags & 1) ? -v : v;", "}"]
    lines = [
        "/* Generated by tools/gen_tables.py - do not edit. */",
        "/* Table %02d: %d values of the %s series. */" % (nn, len(vals), SERIES[nn % 6]),
        '#include "tables.h"',
        "",
        "static const int values[%d] = {" % len(vals),
    ] + rows + [
        "};",
        "",
        "int %s_value(int i)" % name,
        "{",
        "    return (i >= 0 && i < %d) ? values[i] : -1;" % len(vals),
        "}",
        "",
        "int %s_sum(void)" % name,
        "{",
        "    int s = 0;",
        "",
        "    for (int i = 0; i < %d; i++)" % len(vals),
        "        s += values[i];",
        "    return s;",
        "}",
        "",
    ] + scaled
    return "\n".join(lines) + "\n"


def header(count):
    """The declarations of all tables."""
    lines = ["/* Generated by tools/gen_tables.py - do not edit. */",
             "#ifndef TABLES_H", "#define TABLES_H", "",
             "#define TABLE_COUNT %d" % count, ""]
    for nn in range(count):
        name = "table_%02d" % nn
        lines.append("int %s_value(int i);" % name)
        lines.append("int %s_sum(void);" % name)
        lines.append("int %s_scaled(int i, int flags);" % name)
    lines += ["", "#endif"]
    return "\n".join(lines) + "\n"


def main(argv):
    """Write COUNT tables and the header into OUTDIR."""
    outdir, count = argv[0], int(argv[1])
    os.makedirs(outdir, exist_ok=True)
    for nn in range(count):
        path = os.path.join(outdir, "table_%02d.c" % nn)
        with open(path, "w") as fh:
            fh.write(table_source(nn))
        print("wrote %s (%d values, sum %d)" % (path, len(values(nn)), sum(values(nn))))
    with open(os.path.join(outdir, "tables.h"), "w") as fh:
        fh.write(header(count))
    print("wrote %s (%d tables)" % (os.path.join(outdir, "tables.h"), count))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
`;

const T = "\t";
const csrcMakefile = L(
  "# libutil: string and number helpers, plus the generated lookup tables.",
  "#   make          build build/libutil.a (and list the objects' sizes)",
  "#   make test     build and run the tests",
  "#   make check    the sources must compile without warnings",
  "",
  "CC = gcc",
  "CFLAGS = -std=c99 -Wall -Wextra -O2 -Iinclude -Igen",
  `TABLES = ${TABLES}`,
  "",
  "SRCS = src/strutil.c src/mathutil.c",
  "GEN = $(foreach n,$(shell seq -f %02g 0 $$(($(TABLES) - 1))),gen/table_$(n).c)",
  "OBJS = $(patsubst %.c,build/%.o,$(SRCS) $(GEN))",
  "",
  "all: build/libutil.a sizes",
  "",
  "gen/.stamp: ../tools/gen_tables.py",
  `${T}python3 ../tools/gen_tables.py gen $(TABLES)`,
  `${T}@touch $@`,
  "",
  "$(GEN) gen/tables.h: gen/.stamp ;",
  "",
  "build/%.o: %.c include/util.h gen/tables.h",
  `${T}@mkdir -p $(dir $@)`,
  `${T}$(CC) $(CFLAGS) -c $< -o $@`,
  "",
  "build/libutil.a: $(OBJS)",
  `${T}ar rcs $@ $^`,
  `${T}@echo "built $@ from $(words $^) objects"`,
  "",
  "sizes: build/libutil.a",
  `${T}@for o in $(OBJS); do printf '%-28s %6d bytes\\n' $$o $$(wc -c < $$o); done`,
  "",
  "build/test_util: tests/test_util.c build/libutil.a",
  `${T}$(CC) $(CFLAGS) $< build/libutil.a -o $@`,
  "",
  "test: build/test_util",
  `${T}./build/test_util`,
  "",
  "check:",
  `${T}$(CC) $(CFLAGS) -Werror -fsyntax-only $(SRCS)`,
  "",
  "clean:",
  `${T}rm -rf build gen`,
  "",
  ".PHONY: all sizes test check clean",
);

const rootMakefile = L(
  "# The whole project: make test | lint | build | report",
  "",
  "test: pytest ctest jstest",
  "",
  "pytest:",
  `${T}cd py && python3 -m unittest test_ledger`,
  "",
  "ctest:",
  `${T}$(MAKE) -C csrc test`,
  "",
  "jstest:",
  `${T}node web/test/run.js`,
  "",
  "lint:",
  `${T}python3 tools/lint.py py web tools`,
  `${T}$(MAKE) -C csrc check`,
  "",
  "build:",
  `${T}$(MAKE) -C csrc all`,
  "",
  "report:",
  `${T}python3 py/report.py data/statements.csv`,
  "",
  ".PHONY: test pytest ctest jstest lint build report",
);

const lintPy = String.raw`"""A small lint for the Python and JavaScript sources.

    python3 tools/lint.py DIR...

E501  line longer than 120 characters
W291  trailing whitespace
W191  indentation with a tab
D103  public module-level function without a docstring (Python)
J001  console.log left in library code (JavaScript, outside test/)

Prints one line per problem, path:line:col: CODE message, then a count, and
exits 1 if there was any problem.
"""

import os
import re
import sys

MAX_LINE = 120
DEF = re.compile(r"^def ([a-zA-Z]\w*)\(")


def sources(dirs):
    """The .py and .js files under dirs, in a stable order."""
    out = []
    for top in dirs:
        for root, subdirs, files in os.walk(top):
            subdirs[:] = sorted(d for d in subdirs if d not in ("__pycache__", "node_modules"))
            out.extend(os.path.join(root, f) for f in sorted(files) if f.endswith((".py", ".js")))
    return out


def check_lines(path, lines):
    """The problems of one file: (line, col, code, message)."""
    problems = []
    for n, line in enumerate(lines, 1):
        text = line.rstrip("\n")
        if len(text) > MAX_LINE:
            problems.append((n, MAX_LINE + 1, "E501",
                             "line too long (%d > %d characters)" % (len(text), MAX_LINE)))
        if text != text.rstrip():
            problems.append((n, len(text.rstrip()) + 1, "W291", "trailing whitespace"))
        if text.startswith("\t"):
            problems.append((n, 1, "W191", "indentation contains tabs"))
        if path.endswith(".py"):
            m = DEF.match(text)
            if m:
                following = lines[n].strip() if n < len(lines) else ""
                if not following.startswith(('"""', "'''", 'r"""')):
                    problems.append((n, 1, "D103",
                                     "missing docstring in public function %s" % m.group(1)))
        elif "/test/" not in path and "console.log(" in text:
            problems.append((n, text.index("console.log(") + 1, "J001",
                             "console.log in library code"))
    return problems


def main(argv):
    """Lint the directories in argv."""
    count = 0
    for path in sources(argv or ["."]):
        with open(path, encoding="utf-8") as fh:
            lines = fh.readlines()
        for n, col, code, message in check_lines(path, lines):
            print("%s:%d:%d: %s %s" % (path, n, col, code, message))
            count += 1
    print("%d problem%s found" % (count, "" if count == 1 else "s"))
    return 1 if count else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
`;

// --- web -----------------------------------------------------------------------

const MONTHS: Record<string, string[]> = {
  en: ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"],
  de: ["Januar", "Februar", "Maerz", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober", "November", "Dezember"],
  fr: ["janvier", "fevrier", "mars", "avril", "mai", "juin", "juillet", "aout", "septembre", "octobre", "novembre", "decembre"],
  es: ["enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre", "noviembre", "diciembre"],
  it: ["gennaio", "febbraio", "marzo", "aprile", "maggio", "giugno", "luglio", "agosto", "settembre", "ottobre", "novembre", "dicembre"],
  nl: ["januari", "februari", "maart", "april", "mei", "juni", "juli", "augustus", "september", "oktober", "november", "december"],
};

function formatJs(): string {
  const months = Object.entries(MONTHS)
    .map(([lang, ms]) => `  ${lang}: [\n${ms.map((m) => `    ${JSON.stringify(m)},`).join("\n")}\n  ],`)
    .join("\n");
  return String.raw`"use strict";
// format.js - text formatting for the ledger's web view: money, padding,
// slugs, wrapping, dates, sizes and query strings. No dependencies; works in
// node and in the browser (as a CommonJS module through the bundler).

/** Month names by language, for the statement headers. */
const MONTHS = {
${months}
};

/** Binary size units, for attachments. */
const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

/** Pad s on the left with fill to width characters (longer strings unchanged). */
function padLeft(s, width, fill = " ") {
  s = String(s);
  while (s.length < width) s = fill + s;
  return s;
}

/** Pad s on the right with fill to width characters (longer strings unchanged). */
function padRight(s, width, fill = " ") {
  s = String(s);
  while (s.length < width) s = s + fill;
  return s;
}

/** Center s in width characters; an odd leftover goes to the right. */
function center(s, width, fill = " ") {
  s = String(s);
  const total = Math.max(0, width - s.length);
  const left = Math.floor(total / 2);
  return fill.repeat(left) + s + fill.repeat(total - left);
}

/** Digits with a comma every three from the right: "1234567" -> "1,234,567". */
function groupThousands(digits) {
  let out = "";
  for (let i = 0; i < digits.length; i++) {
    if ((digits.length - i) % 3 === 0) out += ",";
    out += digits[i];
  }
  return out;
}

/**
 * An amount in minor units (cents) as the statements show it:
 * formatMoney(-123456, "EUR") is "-1,234.56 EUR". decimals: the currency's.
 */
function formatMoney(cents, currency = "EUR", decimals = 2) {
  const negative = cents < 0;
  const abs = Math.abs(Math.round(cents));
  const scale = 10 ** decimals;
  const whole = groupThousands(String(Math.floor(abs / scale)));
  const frac = decimals ? "." + padLeft(abs % scale, decimals, "0") : "";
  return (negative ? "-" : "") + whole + frac + " " + currency;
}

/** A ratio as a percentage with the given digits: formatPercent(0.1234, 1) is "12.3%". */
function formatPercent(ratio, digits = 0) {
  return (ratio * 100).toFixed(digits) + "%";
}

/** A size in bytes, in binary units with one decimal above 1 KiB: "1.5 KiB". */
function formatBytes(n) {
  let i = 0;
  let v = n;
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? n + " B" : v.toFixed(1) + " " + UNITS[i];
}

/** Seconds as "1h 02m 03s" (hours only when there are any). */
function formatDuration(seconds) {
  const s = Math.floor(seconds % 60);
  const m = Math.floor(seconds / 60) % 60;
  const h = Math.floor(seconds / 3600);
  const mm = padLeft(m, 2, "0") + "m " + padLeft(s, 2, "0") + "s";
  return h ? h + "h " + mm : mm;
}

/** A URL slug: lower case, ASCII letters and digits, single dashes between words. */
function slugify(text) {
  return String(text)
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/[^a-z0-9]/g, "-")
    .replace(/^-|-$/g, "");
}

/** Every word capitalised, the rest lower-cased ("of", "and", "the" kept small inside). */
function titleCase(text) {
  const small = ["of", "and", "the", "a", "an", "in", "on", "for"];
  return String(text)
    .toLowerCase()
    .split(" ")
    .map((w, i) => (i > 0 && small.includes(w) ? w : w.charAt(0).toUpperCase() + w.slice(1)))
    .join(" ");
}

/** s cut to at most n characters, with "..." at the end when cut. */
function truncate(s, n) {
  s = String(s);
  if (s.length <= n) return s;
  return n <= 3 ? s.slice(0, n) : s.slice(0, n - 3) + "...";
}

/**
 * Words of text greedily wrapped into lines of at most width characters
 * (a word longer than width gets a line of its own).
 */
function wrapText(text, width) {
  const words = String(text).split(/\s+/).filter(Boolean);
  const lines = [];
  let line = "";
  for (const word of words) {
    if (line && line.length + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? line + " " + word : word;
    }
  }
  if (line) lines.push(line);
  console.log("wrapText", words.length, "words", lines.length, "lines");
  return lines;
}

/** "1 item", "2 items"; plural defaults to word + "s". */
function plural(n, word, pluralWord = word + "s") {
  return n + " " + (n === 1 ? word : pluralWord);
}

/** 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 101st ... */
function ordinal(n) {
  const mod100 = n % 100;
  if (mod100 >= 11 && mod100 <= 13) return n + "th";
  return n + (["th", "st", "nd", "rd"][n % 10] || "th");
}

/** "a", "a and b", "a, b and c". */
function formatList(items, conjunction = "and") {
  if (items.length <= 1) return items.join("");
  return items.slice(0, -1).join(", ") + " " + conjunction + " " + items[items.length - 1];
}

/** The initials of a name, upper-cased: "ada lovelace" -> "AL". */
function initials(name) {
  return String(name)
    .split(/\s+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase())
    .join("");
}

/** A card number with all but the last four digits masked, in groups of four. */
function maskCard(number) {
  const digits = String(number).replace(/\D/g, "");   
  const masked = "*".repeat(Math.max(0, digits.length - 4)) + digits.slice(-4);
  return masked.replace(/(.{4})(?=.)/g, "$1 ");
}

/** HTML-escape &, <, >, " and '. */
function escapeHtml(s) {
  return String(s)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** "camelCaseName" -> "camel_case_name". */
function camelToSnake(s) {
  return String(s).replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase();
}

/** "snake_case_name" -> "snakeCaseName". */
function snakeToCamel(s) {
  return String(s).replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
}

/** Parse "a=1&b=two%20words&c" into { a: "1", b: "two words", c: "" }. */
function parseQuery(qs) {
  const out = {};
  for (const part of String(qs).replace(/^\?/, "").split("&")) {
    if (!part) continue;
    const eq = part.indexOf("=");
    const key = decodeURIComponent(eq < 0 ? part : part.slice(0, eq));
    out[key] = eq < 0 ? "" : decodeURIComponent(part.slice(eq + 1).replace(/\+/g, " "));
  }
  return out;
}

/** The inverse of parseQuery, keys sorted so that URLs compare equal. */
function buildQuery(params) {
  return Object.keys(params)
    .sort()
    .map((k) => encodeURIComponent(k) + "=" + encodeURIComponent(params[k]))
    .join("&");
}

/** The name of month m (1-12) in a language of MONTHS (English if unknown). */
function monthName(m, lang = "en") {
  const names = MONTHS[lang] || MONTHS.en;
  if (m < 1 || m > 12) throw new RangeError("month out of range: " + m);
  return names[m - 1];
}

/** A statement header: "Statement for March 2024" in the language's words. */
function statementTitle(year, month, lang = "en") {
  const word = { en: "Statement for", de: "Kontoauszug", fr: "Releve de", es: "Extracto de" }[lang] || "Statement for";
  return word + " " + monthName(month, lang) + " " + year;
}

/** A table of rows (arrays of strings) with columns padded to their widths. */
function formatTable(rows, align = []) {
  const widths = [];
  for (const row of rows) row.forEach((c, i) => (widths[i] = Math.max(widths[i] || 0, String(c).length)));
  return rows
    .map((row) => row.map((c, i) => (align[i] === "right" ? padLeft(c, widths[i]) : padRight(c, widths[i]))))
    .map((cells) => cells.join("  ").trimEnd())
    .join("\n");
}

module.exports = {
  MONTHS,
  UNITS,
  padLeft,
  padRight,
  center,
  groupThousands,
  formatMoney,
  formatPercent,
  formatBytes,
  formatDuration,
  slugify,
  titleCase,
  truncate,
  wrapText,
  plural,
  ordinal,
  formatList,
  initials,
  maskCard,
  escapeHtml,
  camelToSnake,
  snakeToCamel,
  parseQuery,
  buildQuery,
  monthName,
  statementTitle,
  formatTable,
};
`;
}

function runJs(): string {
  const monthTests = Object.entries(MONTHS)
    .map(([lang, ms]) => `test("monthName: ${lang} has 12 months", () => {\n  eq(f.monthName(1, "${lang}"), ${JSON.stringify(ms[0])});\n  eq(f.monthName(12, "${lang}"), ${JSON.stringify(ms[11])});\n});`)
    .join("\n\n");
  return String.raw`"use strict";
// The tests of format.js: node web/test/run.js [FILTER]
// Prints TAP: "ok N - name" or "not ok N - name" with what differed.

const f = require("../format.js");

const tests = [];
const test = (name, fn) => tests.push({ name, fn });
const show = (v) => JSON.stringify(v);

function eq(got, want) {
  if (show(got) !== show(want)) throw new Error("expected " + show(want) + ", got " + show(got));
}

function throws(fn, type) {
  try {
    fn();
  } catch (e) {
    if (e instanceof type) return;
    throw new Error("expected " + type.name + ", got " + e.name);
  }
  throw new Error("expected " + type.name + ", nothing thrown");
}

// --- padding ---------------------------------------------------------------

test("padLeft: pads to the width", () => eq(f.padLeft("7", 3, "0"), "007"));
test("padLeft: longer strings unchanged", () => eq(f.padLeft("12345", 3), "12345"));
test("padRight: pads to the width", () => eq(f.padRight("ab", 4, "."), "ab.."));
test("center: odd leftover to the right", () => eq(f.center("ab", 5, "*"), "*ab**"));

// --- money -----------------------------------------------------------------

test("groupThousands: seven digits", () => eq(f.groupThousands("1234567"), "1,234,567"));
test("groupThousands: three digits", () => eq(f.groupThousands("100"), "100"));
test("groupThousands: six digits", () => eq(f.groupThousands("123456"), "123,456"));
test("formatMoney: negative with thousands", () => eq(f.formatMoney(-123456, "EUR"), "-1,234.56 EUR"));
test("formatMoney: small amount", () => eq(f.formatMoney(5, "EUR"), "0.05 EUR"));
test("formatMoney: hundreds", () => eq(f.formatMoney(42000, "USD"), "420.00 USD"));
test("formatMoney: no decimals", () => eq(f.formatMoney(1234567, "JPY", 0), "1,234,567 JPY"));
test("formatMoney: three decimals", () => eq(f.formatMoney(1500, "KWD", 3), "1.500 KWD"));
test("formatPercent: one digit", () => eq(f.formatPercent(0.1234, 1), "12.3%"));

// --- sizes and durations -----------------------------------------------------

test("formatBytes: bytes", () => eq(f.formatBytes(512), "512 B"));
test("formatBytes: KiB", () => eq(f.formatBytes(1536), "1.5 KiB"));
test("formatBytes: MiB", () => eq(f.formatBytes(5 * 1024 * 1024), "5.0 MiB"));
test("formatDuration: minutes", () => eq(f.formatDuration(125), "02m 05s"));
test("formatDuration: hours", () => eq(f.formatDuration(3723), "1h 02m 03s"));

// --- words -----------------------------------------------------------------

test("slugify: simple", () => eq(f.slugify("Hello World"), "hello-world"));
test("slugify: punctuation runs collapse", () => eq(f.slugify("Q1 -- report, final!"), "q1-report-final"));
test("slugify: accents dropped", () => eq(f.slugify("Cafe Kranzler"), "cafe-kranzler"));
test("slugify: trims dashes", () => eq(f.slugify("  spaced out  "), "spaced-out"));
test("titleCase: small words", () => eq(f.titleCase("the bank of england"), "The Bank of England"));
test("truncate: short unchanged", () => eq(f.truncate("abc", 5), "abc"));
test("truncate: cut with dots", () => eq(f.truncate("statement", 6), "sta..."));
test("wrapText: fits exactly", () => eq(f.wrapText("aaa bbb ccc", 7), ["aaa bbb", "ccc"]));
test("wrapText: one over", () => eq(f.wrapText("aaaa bbb", 7), ["aaaa", "bbb"]));
test("wrapText: long word alone", () => eq(f.wrapText("a verylongword b", 5), ["a", "verylongword", "b"]));
test("plural: one", () => eq(f.plural(1, "record"), "1 record"));
test("plural: many", () => eq(f.plural(3, "entry", "entries"), "3 entries"));
test("ordinal: teens", () => eq([11, 12, 13].map(f.ordinal), ["11th", "12th", "13th"]));
test("ordinal: others", () => eq([1, 2, 3, 4, 21, 101].map(f.ordinal), ["1st", "2nd", "3rd", "4th", "21st", "101st"]));
test("formatList: three", () => eq(f.formatList(["a", "b", "c"]), "a, b and c"));
test("formatList: one", () => eq(f.formatList(["a"]), "a"));
test("initials: two words", () => eq(f.initials("ada  lovelace"), "AL"));
test("maskCard: sixteen digits", () => eq(f.maskCard("4539 1488 0343 6467"), "**** **** **** 6467"));
test("escapeHtml: all five", () =>
  eq(f.escapeHtml("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"));
test("camelToSnake", () => eq(f.camelToSnake("totalAmountEUR"), "total_amount_eur"));
test("snakeToCamel", () => eq(f.snakeToCamel("total_amount_2"), "totalAmount2"));

// --- queries ---------------------------------------------------------------

test("parseQuery: values and flags", () => eq(f.parseQuery("?a=1&b=two%20words&c"), { a: "1", b: "two words", c: "" }));
test("parseQuery: plus is a space", () => eq(f.parseQuery("q=acme+groceries"), { q: "acme groceries" }));
test("buildQuery: sorted keys", () => eq(f.buildQuery({ b: "2", a: "x y" }), "a=x%20y&b=2"));

// --- months and tables -------------------------------------------------------

${monthTests}

test("monthName: out of range", () => throws(() => f.monthName(13), RangeError));
test("statementTitle: German", () => eq(f.statementTitle(2024, 3, "de"), "Kontoauszug Maerz 2024"));
test("formatTable: right-aligned amounts", () =>
  eq(f.formatTable([["a", "1.00"], ["bbb", "10.00"]], ["left", "right"]), "a     1.00\nbbb  10.00"));

// --- run -------------------------------------------------------------------

const filter = process.argv[2] || "";
const chosen = tests.filter((t) => t.name.includes(filter));
let failed = 0;
console.log("TAP version 13");
chosen.forEach((t, i) => {
  try {
    t.fn();
    console.log("ok " + (i + 1) + " - " + t.name);
  } catch (e) {
    failed++;
    console.log("not ok " + (i + 1) + " - " + t.name);
    console.log("  ---");
    console.log("  message: " + e.message);
    console.log("  ...");
  }
});
console.log("1.." + chosen.length);
console.log("# tests " + chosen.length);
console.log("# pass " + (chosen.length - failed));
console.log("# fail " + failed);
process.exitCode = failed ? 1 : 0;
`;
}

// --- the session -----------------------------------------------------------------

export function marathon(p: string): Scenario {
  const at = (f: string) => join(p, f);
  const git = "git -c user.email=a@b -c user.name=a";
  let day = 0;
  // Fixed dates, so that commit hashes are the same in every run.
  const commit = (msg: string) => {
    day++;
    const d = `2024-05-${String(day).padStart(2, "0")}T10:00:00+0000`;
    return `git add -A && GIT_AUTHOR_DATE=${d} GIT_COMMITTER_DATE=${d} ${git} commit -q -m "${msg}" && git log --oneline`;
  };
  const ledger = at("py/ledger.py");
  const tests = at("py/test_ledger.py");
  const strutil = at("csrc/src/strutil.c");
  const mathutil = at("csrc/src/mathutil.c");
  const testUtil = at("csrc/tests/test_util.c");
  const format = at("web/format.js");
  const run = at("web/test/run.js");
  const pyAll = bash("cd py && python3 -m unittest -v test_ledger", "Run the Python tests");
  const cBuild = bash("make -C csrc clean all", "Rebuild libutil");
  const cTest = bash("make -C csrc test", "Run the C tests");
  const jsTest = bash("node web/test/run.js", "Run the JS tests");
  const lint = bash("make lint", "Lint");

  return {
    script: [
      // Setting up the project.
      write(at(".gitignore"), L("__pycache__/", "*.pyc", "csrc/build/", "csrc/gen/", "opencode.json", ".opencode/")),
      write(at("Makefile"), rootMakefile),
      write(ledger, ledgerPy()),
      write(tests, testLedgerPy()),
      write(at("py/report.py"), reportPy),
      write(at("data/statements.csv"), statementsCsv()),
      write(at("tools/lint.py"), lintPy),
      write(at("tools/gen_tables.py"), genTablesPy),
      write(at("csrc/Makefile"), csrcMakefile),
      write(at("csrc/include/util.h"), utilH),
      write(strutil, strutilC),
      write(mathutil, mathutilC),
      write(testUtil, testUtilC()),
      write(format, formatJs()),
      write(run, runJs()),
      bash(`git init -q -b main && ${commit("Import the ledger tools")}`, "Start a repository"),
      bash("git ls-files | sort && git ls-files | wc -l", "List the files"),
      bash("make -C csrc", "Build libutil"),

      // The Python suite: five bugs, fixed one by one.
      pyAll,
      read(ledger),
      read(tests),
      bash("grep -rn 'parse_amount' py", "Find parse_amount"),
      edit(ledger, "        s = s[1:-1]\n        negative = False\n", "        s = s[1:-1]\n        negative = True\n"),
      bash("cd py && python3 -m unittest -v test_ledger.TestParseAmount", "Run the amount tests"),
      pyAll,
      bash("python3 py/report.py data/statements.csv", "Try the report"),
      read(ledger, 196, 45),
      edit(ledger, "        c = line[i]\n        if c == sep:\n", "        c = line[i]\n        if c == sep and not quoted:\n"),
      bash("cd py && python3 -m unittest -v test_ledger.TestSplitCsv test_ledger.TestRecords", "Run the CSV tests"),
      bash("make pytest", "Run the Python tests"),
      lint,
      read(ledger),
      bash("grep -rn 'month_key' py", "Find month_key"),
      edit(ledger, '    return "%d-%d" % (y, m)\n', '    return "%04d-%02d" % (y, m)\n'),
      bash("cd py && python3 -m unittest -v test_ledger 2>&1 | tail -30", "Run the Python tests"),
      bash("grep -n 'CURRENCIES\\[' py/ledger.py", "Find the currency lookups"),
      edit(ledger, "        return Decimal(CURRENCIES[currency][2])\n", "        return Decimal(CURRENCIES[currency.upper()][2])\n"),
      pyAll,
      read(tests),
      read(ledger, 380, 40),
      edit(ledger, "    return round_amount(total // len(records), records[0].currency)\n", "    return round_amount(total / len(records), records[0].currency)\n"),
      bash("make pytest", "Run the Python tests"),
      bash("python3 py/report.py data/statements.csv", "Run the report"),
      bash(commit("ledger: parenthesised negatives, quoted separators, padded month keys, currency case, exact mean"), "Commit"),

      // The C library: four failing checks, a warning, rebuilds.
      cTest,
      read(strutil),
      read(testUtil),
      read(mathutil),
      edit(strutil, "isspace((unsigned char)s[end]))\n        end--;", "isspace((unsigned char)s[end - 1]))\n        end--;"),
      bash("make -C csrc test 2>&1 | tail -30", "Run the C tests"),
      bash("grep -rn 'clamp_long' csrc", "Find clamp_long"),
      edit(mathutil, "    if (v > hi)\n        return lo;\n", "    if (v > hi)\n        return hi;\n"),
      bash("cd csrc && make test", "Run the C tests"),
      lint,
      read(strutil),
      edit(strutil, "pad = n < width ? width - n - 1 : 0", "pad = n < width ? width - n : 0"),
      cBuild,
      cTest,
      bash("grep -rn 'MOD_ADLER\\|65521\\|65535' csrc tools", "Find the Adler modulus"),
      read(mathutil, 1, 30),
      edit(mathutil, "#define MOD_ADLER 65535u", "#define MOD_ADLER 65521u"),
      cTest,
      bash("git status --short && git diff --stat", "What changed"),
      bash(commit("libutil: trim trailing blanks, clamp to hi, pad widths, Adler-32 modulus 65521"), "Commit"),

      // The JS module: three bugs and a debugging line.
      jsTest,
      read(format),
      read(run),
      edit(format, "    if ((digits.length - i) % 3 === 0) out += \",\";", "    if (i > 0 && (digits.length - i) % 3 === 0) out += \",\";"),
      bash("node web/test/run.js formatMoney", "Run the money tests"),
      jsTest,
      edit(format, '    .replace(/[^a-z0-9]/g, "-")\n', '    .replace(/[^a-z0-9]+/g, "-")\n'),
      bash("cd web && node test/run.js 2>&1 | tail -25", "Run the JS tests"),
      read(format),
      read(format, 190, 30),
      edit(format, "    if (line && line.length + word.length > width) {", "    if (line && line.length + 1 + word.length > width) {"),
      jsTest,
      cBuild,
      bash(commit("format.js: thousands grouping, slug dashes, wrap width"), "Commit"),

      // The lint, failing since the start, fixed at last.
      lint,
      read(at("tools/lint.py")),
      bash("python3 tools/lint.py py web tools", "Lint the sources"),
      edit(
        ledger,
        "# Rules are tried in order and the first keyword found in the upper-cased payee wins, so more specific keywords come first.\n",
        "# Rules are tried in order and the first keyword found in the upper-cased payee\n# wins, so more specific keywords come first.\n",
      ),
      edit(
        ledger,
        '        raise LedgerError("expected 6 fields (date,payee,amount,currency,category,memo), got %d in line %r" % (len(fields), line))\n',
        '        raise LedgerError("expected %d fields (%s), got %d in line %r"\n                          % (len(FIELDS), ",".join(FIELDS), len(fields), line))\n',
      ),
      bash("python3 tools/lint.py py web tools", "Lint the sources"),
      edit(ledger, "def dedupe(records):\n    seen = set()\n", 'def dedupe(records):\n    """The records without repeats of the same key(), the first of each kept."""\n    seen = set()\n'),
      edit(format, '  const digits = String(number).replace(/\\D/g, "");   \n', '  const digits = String(number).replace(/\\D/g, "");\n'),
      edit(format, '  console.log("wrapText", words.length, "words", lines.length, "lines");\n', ""),
      lint,
      edit(strutil, "    size_t count = 0;\n    int last = -1;\n", "    size_t count = 0;\n"),
      lint,
      bash("make test 2>&1 | tail -40", "Run all the tests"),
      read(ledger),
      bash(commit("lint: wrap long lines, docstring for dedupe, no debugging output"), "Commit"),

      // A feature: the report by category, with tests first.
      edit(
        tests,
        '\n\nif __name__ == "__main__":\n',
        String.raw`


class TestTopPayees(unittest.TestCase):
    """top_payees: where the money goes."""

    def test_top_two(self):
        """The two payees with the most spent, most first."""
        got = ledger.top_payees(make_records(), 2)
        self.assertEqual(got, [("Meier (rent)", D("-950.00")), ("Acme Groceries", D("-115.55"))])

    def test_income_ignored(self):
        """Income is not spending."""
        names = [name for name, _ in ledger.top_payees(make_records(), 10)]
        self.assertNotIn("Acme Corp (salary)", names)

if __name__ == "__main__":
`,
      ),
      bash("cd py && python3 -m unittest -v test_ledger.TestTopPayees", "Run the new tests"),
      edit(
        ledger,
        "def format_table(headers, rows):\n",
        String.raw`def top_payees(records, n=5, currency="EUR"):
    """The n payees with the most spent (in currency), as (payee, total), most first."""
    spent = {}
    for r in records:
        amount = convert(r.amount, r.currency, currency)
        if amount < 0:
            spent[r.payee] = spent.get(r.payee, Decimal(0)) + amount
    return sorted(spent.items(), key=lambda kv: (kv[1], kv[0]))[:n]


def format_table(headers, rows):
`,
      ),
      bash("cd py && python3 -m unittest -v test_ledger.TestTopPayees", "Run the new tests"),
      edit(
        at("py/report.py"),
        "    print(ledger.report(records))\n",
        String.raw`    print(ledger.report(records))
    print()
    print("Top payees")
    print(ledger.format_table(["payee", "spent"], [
        (name, ledger.format_amount(total)) for name, total in ledger.top_payees(records, 8)
    ]))
`,
      ),
      bash("python3 py/report.py data/statements.csv", "Run the report"),
      bash("python3 py/report.py data/statements.csv --category groceries", "Groceries only"),
      pyAll,
      bash("python3 tools/lint.py py web tools", "Lint the sources"),
      bash(commit("ledger: top_payees, and the report lists them"), "Commit"),

      // Small things to finish.
      bash("git log --oneline", "History"),
      bash("wc -l py/*.py web/*.js web/test/*.js csrc/src/*.c csrc/tests/*.c tools/*.py", "Count lines"),
      bash("grep -c 'def test_' py/test_ledger.py && grep -c '^test(' web/test/run.js && grep -c 'CHECK_' csrc/tests/test_util.c", "Count tests"),
      bash("grep -rn 'TODO' py web csrc/src csrc/tests tools || echo 'no TODOs'", "Find TODOs"),
      bash("head -5 data/statements.csv && tail -3 data/statements.csv", "Look at the data"),
      bash("cut -d, -f4 data/statements.csv | sort | uniq -c | sort -rn", "Currencies used"),
      bash("awk -F, 'NR > 1 && $5 != \"\" { n[$5]++ } END { for (c in n) print n[c], c }' data/statements.csv | sort -rn", "Categories given"),
      bash("grep -c ',USD,\\|,GBP,' data/statements.csv", "Foreign currency lines"),
      bash("python3 -c \"import sys; sys.path.insert(0, 'py'); import ledger; print(ledger.convert(ledger.parse_amount('(1,250.00) USD'), 'usd', 'eur'))\"", "Check a conversion"),
      bash("node -e \"const f = require('./web/format.js'); console.log(f.formatMoney(-123456789, 'EUR'), f.slugify('Kontoauszug -- Maerz 2024'))\"", "Check formatting"),
      bash("perl -ne 'print \"$.: $1\\n\" if /^def (\\w+)/' py/ledger.py", "List the functions"),
      bash("ruby -e 'rows = File.readlines(\"data/statements.csv\").drop(1); puts rows.size; puts rows.map { |l| l.split(\",\")[0][0, 7] }.uniq.size'", "Count rows and months"),
      bash("sed -n '1,12p' csrc/Makefile", "Look at the C Makefile"),
      bash("make -C csrc test 2>&1 | tail -4", "C tests once more"),
      bash("node web/test/run.js wrap", "Wrap tests once more"),
      bash("cd py && python3 -m unittest test_ledger.TestConvert test_ledger.TestDates", "Two Python classes"),
      bash("grep -rn 'def validate_' py/ledger.py | wc -l", "Count validators"),
      bash("git show --stat HEAD", "The last commit"),
      bash("git diff HEAD~2 --stat", "The last two commits"),
      bash("git status --short && echo clean", "Status"),
    ],
    answer:
      "Done. All three suites pass: the Python suite (95 tests, 10 failures and 5 errors at first from five bugs in ledger.py; 97 with the new top_payees tests), the C checks (64, 6 failing at first from four bugs in libutil) and the JS tests (51, 6 failing at first from three bugs in format.js). The lint is clean, libutil builds with only the generated tables' warnings, and the report lists the top payees.",
  };
}
