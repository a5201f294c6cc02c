// A second long session of real runs of real tools, in the languages and
// output formats that marathon.ts does not use: a Perl module tested with
// `prove` (TAP, Test::More's diagnostics), a Java class with a test runner
// of its own (PASS/FAIL lines, "Tests run: N, Failures: M"), a Rust crate
// with no dependencies under `cargo test --offline` (libtest's report, a
// compile error on the way), a C library built by a ninja-style script (a
// long build log with compiler warnings, a build that fails, then passes),
// and Python doctests. The suites run directly, through subsets, through
// wrappers (a Makefile target, `npm run` scripts, `./check.sh`), with
// `cd x && ...`, piped into `tail -n 20`, with `|| true` and under
// `timeout 60`. Every bug is planted so that a suite really fails, and each
// `edit` really fixes one. Outputs are deterministic (fixed git dates, no
// random names; tests run one at a time) except prove's "wallclock secs"
// line, cargo's "finished in 0.00s" and the thread id in libtest's
// "thread 'tests::x' (1234) panicked" lines.
//
// OpenCode runs its bash tool with HOME set to a fresh directory, so the
// rustup proxy is told where its toolchains are (RUSTUP_HOME, as found when
// the session is built), and cargo builds into the project (CARGO_TARGET_DIR).

import { homedir } from "node:os";
import { join } from "node:path";
import type { Scenario } from "./fake-anthropic.ts";
import { bash, edit, L, read, rng, write } from "./steps.ts";

const BT3 = "```";
const RUSTUP_HOME = process.env.RUSTUP_HOME ?? join(homedir(), ".rustup");

// --- perl/lib/Inventory.pm -----------------------------------------------------

// prefix, category, noun, reorder point, ordering unit, [number, variant]...
const CATALOG: [string, string, string, number, string, [number, string][]][] = [
  ["BOL", "fasteners", "Hex bolt", 400, "box100", [[30, "M6x30"], [42, "M8x40"], [60, "M8x60"], [1050, "M10x50"], [1080, "M10x80"], [1210, "M12x100"]]],
  ["NUT", "fasteners", "Hex nut", 400, "box100", [[6, "M6"], [8, "M8"], [10, "M10"], [12, "M12"], [108, "M8, self-locking"], [110, "M10, self-locking"]]],
  ["WSH", "fasteners", "Washer", 250, "box50", [[6, "M6"], [8, "M8"], [10, "M10"], [12, "M12"], [208, "M8, spring"], [210, "M10, spring"]]],
  ["SCR", "fasteners", "Wood screw", 200, "box200", [[316, "3x16"], [330, "3x30"], [440, "4x40"], [450, "4x50"], [560, "5x60"], [580, "5x80"]]],
  ["ANC", "fasteners", "Wall anchor", 100, "box50", [[6, "6 mm, nylon"], [8, "8 mm, nylon"], [10, "10 mm, nylon"], [108, "8 mm, steel"], [110, "10 mm, steel"], [212, "12 mm, chemical"]]],
  ["GLV", "safety", "Work gloves", 12, "pair", [[1, "size 9"], [2, "size 10"], [3, "size 11"], [11, "cut resistant, size 9"], [12, "cut resistant, size 10"], [21, "nitrile, box of 100"]]],
  ["GOG", "safety", "Safety goggles", 6, "ea", [[1, "clear"], [2, "tinted"], [3, "over-glasses"], [4, "anti-fog"], [5, "vented"], [6, "sealed"]]],
  ["EAR", "safety", "Ear plugs", 200, "box200", [[1, "foam, 200 pairs"], [2, "corded, 100 pairs"], [3, "reusable"], [4, "detectable"], [5, "banded"], [6, "moulded"]]],
  ["HLM", "safety", "Hard hat", 4, "ea", [[1, "white"], [2, "yellow"], [3, "blue"], [4, "red"], [5, "with visor"], [6, "with ear defenders"]]],
  ["TAP", "consumables", "Tape", 24, "ea", [[50, "duct, 50 mm"], [25, "masking, 25 mm"], [19, "insulating, 19 mm"], [48, "packing, 48 mm"], [38, "double-sided, 38 mm"], [75, "warning, 75 mm"]]],
  ["GLU", "consumables", "Glue", 10, "ea", [[1, "wood, 750 g"], [2, "contact, 250 ml"], [3, "epoxy, two-part"], [4, "hot-melt sticks"], [5, "construction, 310 ml"], [6, "super glue, 20 g"]]],
  ["SND", "consumables", "Sanding disc", 100, "box50", [[40, "P40"], [80, "P80"], [120, "P120"], [180, "P180"], [240, "P240"], [400, "P400"]]],
  ["DRL", "tools", "Drill bit", 10, "ea", [[3, "HSS 3 mm"], [5, "HSS 5 mm"], [6, "masonry 6 mm"], [8, "masonry 8 mm"], [10, "wood 10 mm"], [12, "step 4-12 mm"]]],
  ["BLD", "tools", "Saw blade", 5, "ea", [[160, "circular 160 mm"], [190, "circular 190 mm"], [250, "mitre 250 mm"], [300, "jigsaw, wood"], [301, "jigsaw, metal"], [500, "reciprocating"]]],
  ["CBL", "electrical", "Cable", 100, "m", [[15, "NYM-J 3x1.5"], [25, "NYM-J 3x2.5"], [55, "NYM-J 5x2.5"], [75, "H07RN-F 3x1.5"], [100, "CAT6, solid"], [101, "CAT6, stranded"]]],
  ["FUS", "electrical", "Fuse", 20, "box10", [[6, "6 A"], [10, "10 A"], [13, "13 A"], [16, "16 A"], [20, "20 A"], [32, "32 A"]]],
  ["LMP", "electrical", "Lamp", 10, "ea", [[5, "LED E27, 5 W"], [9, "LED E27, 9 W"], [14, "LED E14, 4 W"], [27, "LED GU10, 5 W"], [40, "fluorescent T8"], [60, "work light"]]],
];

const UNITS: [string, number, string][] = [
  ["ea", 1, "each: the base unit"],
  ["pair", 2, "gloves, ear plugs"],
  ["dozen", 12, ""],
  ["gross", 144, "twelve dozen"],
  ["score", 20, ""],
  ["box10", 10, ""],
  ["box25", 25, ""],
  ["box50", 50, ""],
  ["box100", 100, ""],
  ["box200", 200, ""],
  ["box500", 500, ""],
  ["box1000", 1000, ""],
  ["pallet", 2400, "as the supplier packs them: 24 cartons of 100"],
  ["m", 1, "cable is kept in metres"],
  ["roll50", 50, "cable, 50 m"],
  ["roll100", 100, "cable, 100 m"],
];

function inventoryPm(): string {
  const units = UNITS.map(([u, n, why]) => `    ${u.padEnd(8)} => ${String(n).padStart(4)},${why ? `    # ${why}` : ""}`).join("\n");
  const cats = CATALOG.map(([p, c]) => `    ${p} => '${c}',`).join("\n");
  const items = CATALOG.flatMap(([p, , noun, at, unit, vs]) =>
    vs.map(([n, v]) => `    '${p}-${String(n).padStart(4, "0")}' => [${`'${noun} ${v}'`.padEnd(40)}, ${String(at).padStart(4)}, '${unit}'],`),
  ).join("\n");
  return String.raw`package Inventory;

# Inventory: read the stock sheets the warehouse exports, keep the levels,
# and say what to reorder and how much.
#
# A stock sheet is a text file, one item a line, fields separated by "|":
#
#     sku | description | on hand | reorder at | unit
#
# Blank lines and lines starting with "#" are skipped.  Quantities may use
# thousands separators ("1,200") and a unit ("3 dozen"); they are kept in
# the base unit (each) once parsed.  The last field is the unit the item is
# ordered in, which reorder_amount rounds up to.

use strict;
use warnings;
use Exporter 'import';

our @EXPORT_OK = qw(
    parse_qty parse_line load_sheet unit_factor
    needs_reorder reorder_list reorder_amount
    total_on_hand by_category category_of catalog_entry
    format_qty format_report
);

our $VERSION = '0.3.0';

# unit => how many of the base unit ("ea") it holds
our %UNITS = (
${units}
);

# The first three letters of a SKU => its category.
our %CATEGORIES = (
${cats}
);

# The catalog: sku => [description, reorder point, ordering unit].  The
# sheets repeat the description and the point; the catalog is what they
# default to when a field is left empty.
our %CATALOG = (
${items}
);

# --- Quantities -----------------------------------------------------------------

# How many of the base unit one of $unit holds; dies on a unit it does not
# know.  No unit (undef or "") is the base unit.  Units are case-insensitive.
sub unit_factor {
    my ($unit) = @_;
    $unit = 'ea' if !defined $unit || $unit eq '';
    my $f = $UNITS{ lc $unit };
    die "unknown unit: $unit\n" unless defined $f;
    return $f;
}

# A quantity as the sheets write it ("1,200", "3 dozen", "4pair"), in the
# base unit.  Dies on anything else.
sub parse_qty {
    my ($text) = @_;
    die "missing quantity\n" unless defined $text;
    (my $s = $text) =~ s/^\s+|\s+$//g;
    die "empty quantity\n" if $s eq '';
    my ($num, $unit) = $s =~ /^(-?[\d,]+)\s*([A-Za-z][A-Za-z0-9]*)?$/
        or die "not a quantity: '$text'\n";
    $num =~ s/,//;
    return $num * unit_factor($unit);
}

# --- Sheets -----------------------------------------------------------------------

# One line of a sheet, as a hash: sku, description, on_hand, reorder_at
# (both in the base unit) and unit (the ordering unit, lower-cased).
sub parse_line {
    my ($line) = @_;
    my @f = map { s/^\s+|\s+$//gr } split /\|/, $line, -1;
    die "expected 5 fields, got " . scalar(@f) . ": $line\n" unless @f == 5;
    my ($sku, $desc, $on_hand, $reorder_at, $unit) = @f;
    die "bad sku: '$sku'\n" unless $sku =~ /^[A-Z]{3}-\d{4}$/;
    my $known = $CATALOG{$sku};
    $desc = $known->[0] if $desc eq '' && $known;
    $reorder_at = $known->[1] if $reorder_at eq '' && $known;
    $unit = $known->[2] if $unit eq '' && $known;
    unit_factor($unit);    # dies on a unit we do not know
    return {
        sku         => $sku,
        description => $desc,
        on_hand     => parse_qty($on_hand),
        reorder_at  => parse_qty($reorder_at),
        unit        => $unit eq '' ? 'ea' : lc $unit,
    };
}

# Every item of a sheet, in the order of the sheet.  $path may be a file
# name or a reference to a string holding the sheet.
sub load_sheet {
    my ($path) = @_;
    open my $fh, '<', $path or die "cannot open $path: $!\n";
    my @items;
    while (my $line = <$fh>) {
        chomp $line;
        next if $line =~ /^\s*(?:#|$)/;
        push @items, parse_line($line);
    }
    close $fh;
    return \@items;
}

# --- Reordering -----------------------------------------------------------------

# True (1) when the item is at or below its reorder point, else 0.
sub needs_reorder {
    my ($item) = @_;
    return $item->{on_hand} < $item->{reorder_at} ? 1 : 0;
}

# The items to reorder, by SKU.
sub reorder_list {
    my ($items) = @_;
    return [ sort { $a->{sku} cmp $b->{sku} } grep { needs_reorder($_) } @$items ];
}

# How many of its ordering unit to order, so that the level comes back to
# twice the reorder point: whole boxes, rounded up.  0 if not to reorder.
sub reorder_amount {
    my ($item) = @_;
    return 0 unless needs_reorder($item);
    my $want = 2 * $item->{reorder_at} - $item->{on_hand};
    my $f = unit_factor($item->{unit});
    return int(($want + $f - 1) / $f);
}

# --- Totals -----------------------------------------------------------------------

sub total_on_hand {
    my ($items) = @_;
    my $total = 0;
    $total += $_->{on_hand} for @$items;
    return $total;
}

# The category of a SKU, by its prefix; "other" for a prefix not listed.
sub category_of {
    my ($sku) = @_;
    my ($prefix) = $sku =~ /^([A-Z]{3})-/;
    return 'other' unless defined $prefix;
    return $CATEGORIES{$prefix} // 'other';
}

# category => the quantity on hand of its items.
sub by_category {
    my ($items) = @_;
    my %total;
    $total{ category_of($_->{sku}) } += $_->{on_hand} for @$items;
    return \%total;
}

sub catalog_entry {
    my ($sku) = @_;
    return $CATALOG{$sku};
}

# --- Reports ----------------------------------------------------------------------

# 1234567 => "1,234,567"
sub format_qty {
    my ($n) = @_;
    1 while $n =~ s/^(-?\d+)(\d{3})/$1,$2/;
    return $n;
}

# The sheet as a table: SKU and description left-aligned, quantities
# right-aligned, two blanks between columns, no trailing blanks.
sub format_report {
    my ($items) = @_;
    my @rows = ([ 'SKU', 'Description', 'On hand', 'Reorder at' ]);
    push @rows, [ $_->{sku}, $_->{description}, format_qty($_->{on_hand}), format_qty($_->{reorder_at}) ]
        for @$items;
    my @w = (0) x 4;
    for my $r (@rows) {
        for my $i (0 .. 3) {
            my $l = length $r->[$i];
            $w[$i] = $l if $l > $w[$i];
        }
    }
    my @out;
    for my $r (@rows) {
        push @out, join '  ',
            sprintf('%-*s', $w[0], $r->[0]),
            sprintf('%-*s', $w[1], $r->[1]),
            sprintf('%-*s', $w[2], $r->[2]),
            sprintf('%*s',  $w[3], $r->[3]);
    }
    return join('', map { s/\s+$//r . "\n" } @out);
}

1;

__END__

=head1 NAME

Inventory - stock sheets, reorder points and reports

=head1 SYNOPSIS

    use Inventory qw(load_sheet reorder_list reorder_amount format_report);

    my $items = load_sheet('stock/2024-05.txt');
    for my $item (@{ reorder_list($items) }) {
        printf "%s: order %d x %s\n", $item->{sku}, reorder_amount($item), $item->{unit};
    }
    print format_report($items);

=head1 FUNCTIONS

=head2 parse_qty($text)

A quantity in the base unit: "1,200", "3 dozen", "4pair".

=head2 parse_line($line), load_sheet($path)

One line of a sheet, or all of them.  Empty fields default to the catalog.

=head2 needs_reorder($item), reorder_list($items), reorder_amount($item)

An item is reordered when it is at or below its reorder point, up to twice
the point, in whole ordering units.

=head2 total_on_hand($items), by_category($items), category_of($sku)

Totals, in the base unit.

=head2 format_qty($n), format_report($items)

Thousands separators; the sheet as a table.

=cut
`;
}

const perlParseT = String.raw`use strict;
use warnings;
use Test::More tests => 12;
use Inventory qw(parse_qty parse_line unit_factor);

is(parse_qty('12'), 12, 'plain number');
is(parse_qty('  7 '), 7, 'blanks around');
is(parse_qty('1,200'), 1200, 'thousands separator');
is(parse_qty('1,234,567'), 1234567, 'two thousands separators');
is(parse_qty('3 dozen'), 36, 'dozens');
is(parse_qty('2 gross'), 288, 'gross');
is(parse_qty('4pair'), 8, 'a unit without a blank');
eval { parse_qty('') };
like($@, qr/empty quantity/, 'empty is an error');
eval { parse_qty('12 crates') };
like($@, qr/unknown unit: crates/, 'an unknown unit is an error');
my $item = parse_line('BOL-0042 | Hex bolt M8x40 | 1,500 | 400 | box100');
is($item->{sku}, 'BOL-0042', 'the sku of a line');
is($item->{on_hand}, 1500, 'the quantity on hand of a line');
is(unit_factor('BOX100'), 100, 'units are case-insensitive');
`;

const perlStockT = String.raw`use strict;
use warnings;
use Test::More tests => 14;
use Inventory qw(load_sheet needs_reorder reorder_list reorder_amount total_on_hand by_category category_of);

my $sheet = <<'END';
# sku      | description            | on hand | reorder at | unit
BOL-0042   | Hex bolt M8x40         | 1,500   | 400        | box100
NUT-0008   | Hex nut M8             | 380     | 400        | box100
WSH-0008   | Washer M8              | 250     | 250        | box50

SCR-0316   | Wood screw 3x16        | 0       | 200        | box200
GLV-0001   | Work gloves, size 9    | 12 pair | 6 pair     | pair
TAP-0050   | Tape duct, 50 mm       | 3 dozen | 24         | ea
END

my $items = load_sheet(\$sheet);
is(scalar @$items, 6, 'six items, comments and blank lines skipped');
my %by = map { $_->{sku} => $_ } @$items;
is($by{'GLV-0001'}{on_hand}, 24, 'pairs counted in the base unit');
is(needs_reorder($by{'BOL-0042'}), 0, 'well stocked: no reorder');
is(needs_reorder($by{'NUT-0008'}), 1, 'below the point: reorder');
is(needs_reorder($by{'WSH-0008'}), 1, 'at the point: reorder');
is(needs_reorder($by{'SCR-0316'}), 1, 'none left: reorder');
is_deeply([ map { $_->{sku} } @{ reorder_list($items) } ], [ 'NUT-0008', 'SCR-0316', 'WSH-0008' ], 'the reorder list, by sku');
is(reorder_amount($by{'NUT-0008'}), 5, 'nuts: 420 more, five boxes of 100');
is(reorder_amount($by{'SCR-0316'}), 2, 'screws: 400 more, two boxes of 200');
is(reorder_amount($by{'BOL-0042'}), 0, 'bolts: none');
is(total_on_hand($items), 2190, 'total on hand');
is_deeply(by_category($items), { fasteners => 2130, safety => 24, consumables => 36 }, 'totals by category');
is(category_of('TAP-0050'), 'consumables', 'tape is a consumable');
is(category_of('XYZ-0001'), 'other', 'an unknown prefix is other');
`;

const perlReportT = String.raw`use strict;
use warnings;
use Test::More tests => 8;
use Inventory qw(parse_line format_qty format_report catalog_entry);

is(format_qty(12), '12', 'small numbers as they are');
is(format_qty(1234567), '1,234,567', 'thousands separators');
is(format_qty(-4500), '-4,500', 'negative');
is(format_qty(1000), '1,000', 'exactly a thousand');

my @items = map { parse_line($_) } (
    'BOL-0042 | Hex bolt M8x40 | 1,500 | 400 | box100',
    'NUT-0008 | Hex nut M8     | 380   | 400 | box100',
    'GLV-0001 |                | 12 pair |   | pair',
);
my $report = format_report(\@items);
is($report, join('', map { "$_\n" }
    'SKU       Description         On hand  Reorder at',
    'BOL-0042  Hex bolt M8x40        1,500         400',
    'NUT-0008  Hex nut M8              380         400',
    'GLV-0001  Work gloves size 9       24          12',
), 'the report, quantities right-aligned');
is(scalar(() = $report =~ /\n/g), 4, 'a header and three rows');
is(catalog_entry('BOL-0042')->[0], 'Hex bolt M8x40', 'the catalog knows the bolts');
is($items[2]{description}, 'Work gloves size 9', 'an empty description comes from the catalog');
`;

// --- java/src/calc/Intervals.java ---------------------------------------------------

const ROOMS = [
  "atlas", "borealis", "canopus", "deneb", "elnath", "fomalhaut", "gemma", "hadar", "izar", "jabbah",
  "kochab", "lesath", "mira", "nunki", "orion", "pollux", "rigel", "sirius", "thuban", "unuk",
  "vega", "wezen", "xamidimura", "yildun", "zaniah", "acrux", "bellatrix", "capella", "diphda", "enif",
  "furud", "gienah", "hamal", "imai", "jishui", "kraz", "larawag", "markab", "naos", "okab",
];

function intervalsJava(): string {
  const r = rng(7);
  const rooms = ROOMS.map((name) => {
    const open = 420 + 15 * r(12);
    const lunch = 690 + 15 * r(6);
    const back = lunch + 30 + 15 * r(4);
    const close = 1020 + 30 * r(7);
    const ivs = r(3) === 0 ? `[${open},${close})` : `[${open},${lunch}) [${back},${close})`;
    return `        {"${name}", "${ivs}"},`;
  }).join("\n");
  return String.raw`package calc;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Sets of integer intervals: the arithmetic of the booking calendar.
 *
 * <p>An interval is half-open, [lo, hi): it holds lo and not hi, so [540, 720)
 * and [720, 1020) touch without overlapping, and together make [540, 1020).
 * A closed interval written [a, b] is read as [a, b + 1), an open one (a, b)
 * as [a + 1, b). Times of day are minutes since midnight.
 *
 * <p>Lists of intervals are kept <em>normalised</em>: sorted, none empty, no
 * two overlapping or touching. Every method that takes lists expects them
 * normalised, and every method that returns one returns it normalised.
 */
public final class Intervals {
    private Intervals() {}

    /** One half-open interval [lo, hi). */
    public static final class Interval implements Comparable<Interval> {
        public final long lo;
        public final long hi;

        public Interval(long lo, long hi) {
            if (hi < lo) {
                throw new IllegalArgumentException("interval ends before it starts: [" + lo + ", " + hi + ")");
            }
            this.lo = lo;
            this.hi = hi;
        }

        public long length() {
            return hi - lo;
        }

        public boolean isEmpty() {
            return hi == lo;
        }

        public boolean contains(long x) {
            return lo <= x && x < hi;
        }

        @Override
        public int compareTo(Interval o) {
            return lo != o.lo ? Long.compare(lo, o.lo) : Long.compare(hi, o.hi);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Interval && ((Interval) o).lo == lo && ((Interval) o).hi == hi;
        }

        @Override
        public int hashCode() {
            return Long.hashCode(lo) * 31 + Long.hashCode(hi);
        }

        @Override
        public String toString() {
            return "[" + lo + ", " + hi + ")";
        }
    }

    // --- Parsing and formatting -------------------------------------------------------

    private static final Pattern ONE = Pattern.compile("([\\[(])\\s*(-?\\d+)\\s*,\\s*(-?\\d+)\\s*([\\])])");

    /** One interval: "[1, 5)", "[1,5]", "(0, 5)". */
    public static Interval parse(String text) {
        Matcher m = ONE.matcher(text.trim());
        if (!m.matches()) {
            throw new IllegalArgumentException("not an interval: " + text);
        }
        long lo = Long.parseLong(m.group(2));
        long hi = Long.parseLong(m.group(3));
        if (m.group(1).equals("(")) {
            lo++;
        }
        if (m.group(4).equals("]")) {
            hi++;
        }
        return new Interval(lo, hi);
    }

    /** A list of intervals, separated by blanks or semicolons, normalised. */
    public static List<Interval> parseList(String text) {
        List<Interval> out = new ArrayList<>();
        String rest = text.trim();
        Matcher m = ONE.matcher(rest);
        int at = 0;
        while (m.find()) {
            String between = rest.substring(at, m.start()).replace(";", "").trim();
            if (!between.isEmpty()) {
                throw new IllegalArgumentException("not an interval: " + between);
            }
            out.add(parse(m.group()));
            at = m.end();
        }
        if (!rest.substring(at).replace(";", "").trim().isEmpty()) {
            throw new IllegalArgumentException("not an interval: " + rest.substring(at).trim());
        }
        return merge(out);
    }

    /** "[1, 5) [7, 9)", or "(none)" for an empty list. */
    public static String format(List<Interval> xs) {
        if (xs.isEmpty()) {
            return "(none)";
        }
        StringBuilder sb = new StringBuilder();
        for (Interval x : xs) {
            if (sb.length() > 0) {
                sb.append(' ');
            }
            sb.append(x);
        }
        return sb.toString();
    }

    /** Minutes since midnight as a clock time: 545 is "09:05". */
    public static String clock(long minutes) {
        return String.format("%02d:%02d", minutes / 60, minutes % 60);
    }

    /** A list of times of day: "09:00-12:00, 13:00-17:30". */
    public static String formatClock(List<Interval> xs) {
        if (xs.isEmpty()) {
            return "closed";
        }
        StringBuilder sb = new StringBuilder();
        for (Interval x : xs) {
            if (sb.length() > 0) {
                sb.append(", ");
            }
            sb.append(clock(x.lo)).append('-').append(clock(x.hi));
        }
        return sb.toString();
    }

    // --- Set operations ---------------------------------------------------------------

    /** Normalises any list: sorts it, drops empty intervals, joins overlapping and touching ones. */
    public static List<Interval> merge(List<Interval> xs) {
        List<Interval> sorted = new ArrayList<>(xs);
        Collections.sort(sorted);
        List<Interval> out = new ArrayList<>();
        Interval cur = null;
        for (Interval x : sorted) {
            if (x.isEmpty()) {
                continue;
            }
            if (cur == null) {
                cur = x;
            } else if (x.lo < cur.hi) {
                cur = new Interval(cur.lo, Math.max(cur.hi, x.hi));
            } else {
                out.add(cur);
                cur = x;
            }
        }
        if (cur != null) {
            out.add(cur);
        }
        return out;
    }

    /** Everything in a or in b. */
    public static List<Interval> union(List<Interval> a, List<Interval> b) {
        List<Interval> all = new ArrayList<>(a);
        all.addAll(b);
        return merge(all);
    }

    /** Everything in both a and b. */
    public static List<Interval> intersect(List<Interval> a, List<Interval> b) {
        List<Interval> out = new ArrayList<>();
        int i = 0;
        int j = 0;
        while (i < a.size() && j < b.size()) {
            Interval x = a.get(i);
            Interval y = b.get(j);
            long lo = Math.max(x.lo, y.lo);
            long hi = Math.min(x.hi, y.hi);
            if (lo <= hi) {
                out.add(new Interval(lo, hi));
            }
            if (x.hi < y.hi) {
                i++;
            } else {
                j++;
            }
        }
        return out;
    }

    /** Everything in a and not in b. */
    public static List<Interval> subtract(List<Interval> a, List<Interval> b) {
        List<Interval> out = new ArrayList<>();
        int j = 0;
        for (Interval x : a) {
            long lo = x.lo;
            while (j < b.size() && b.get(j).hi <= lo) {
                j++;
            }
            int k = j;
            while (k < b.size() && b.get(k).lo < x.hi) {
                Interval y = b.get(k);
                if (y.lo > lo) {
                    out.add(new Interval(lo, y.lo));
                }
                lo = Math.max(lo, y.hi);
                k++;
            }
            if (lo < x.hi) {
                out.add(new Interval(lo, x.hi));
            }
        }
        return out;
    }

    /** The parts of within that no interval of xs covers. */
    public static List<Interval> gaps(List<Interval> xs, Interval within) {
        List<Interval> w = new ArrayList<>();
        w.add(within);
        return subtract(merge(w), xs);
    }

    /** The total length of a normalised list. */
    public static long totalLength(List<Interval> xs) {
        long n = 0;
        for (Interval x : xs) {
            n += x.length();
        }
        return n;
    }

    /** Whether any interval of a normalised list holds x (binary search). */
    public static boolean contains(List<Interval> xs, long x) {
        int lo = 0;
        int hi = xs.size() - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            Interval iv = xs.get(mid);
            if (x < iv.lo) {
                hi = mid - 1;
            } else if (x > iv.hi) {
                lo = mid + 1;
            } else {
                return true;
            }
        }
        return false;
    }

    /** The first gap of at least length minutes within the given window, or null. */
    public static Interval firstFree(List<Interval> busy, Interval window, long length) {
        for (Interval g : gaps(busy, window)) {
            if (g.length() >= length) {
                return new Interval(g.lo, g.lo + length);
            }
        }
        return null;
    }

    // --- The rooms --------------------------------------------------------------------

    /** The rooms of the building and their opening hours (minutes since midnight). */
    static final String[][] ROOMS = {
${rooms}
    };

    /** The opening hours of a room, normalised; an unknown room throws. */
    public static List<Interval> openingHours(String room) {
        for (String[] r : ROOMS) {
            if (r[0].equals(room)) {
                return parseList(r[1]);
            }
        }
        throw new IllegalArgumentException("no such room: " + room);
    }

    /** The rooms open for the whole of the given interval, by name. */
    public static List<String> roomsOpenFor(Interval want) {
        List<String> out = new ArrayList<>();
        for (String[] r : ROOMS) {
            List<Interval> one = new ArrayList<>();
            one.add(want);
            if (subtract(one, openingHours(r[0])).isEmpty()) {
                out.add(r[0]);
            }
        }
        Collections.sort(out);
        return out;
    }

    /**
     * From the command line: the union of the intervals given
     * ("[1,5) [3,9)"), or with "hours ROOM" a room's opening hours.
     */
    public static void main(String[] args) {
        if (args.length == 2 && args[0].equals("hours")) {
            System.out.println(args[1] + ": " + formatClock(openingHours(args[1])));
            return;
        }
        List<Interval> all = new ArrayList<>();
        for (String a : args) {
            all.addAll(parseList(a));
        }
        List<Interval> merged = merge(all);
        System.out.println(format(merged) + "  (total " + totalLength(merged) + ")");
    }
}
`;
}

const intervalsTestJava = String.raw`package calc;

import calc.Intervals.Interval;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The tests of Intervals, with a runner of its own: one PASS or FAIL line a
 * test, then "Tests run: N, Failures: M". An argument runs only the tests
 * whose names start with it.
 */
public final class IntervalsTest {
    interface Body {
        void run() throws Exception;
    }

    private static final List<String> names = new ArrayList<>();
    private static final List<Body> bodies = new ArrayList<>();

    private static void test(String name, Body body) {
        names.add(name);
        bodies.add(body);
    }

    private static void eq(Object want, Object got) {
        if (!Objects.equals(want, got)) {
            throw new AssertionError("expected " + want + " but was " + got);
        }
    }

    private static void throwsIllegal(Body body, String message) throws Exception {
        try {
            body.run();
        } catch (IllegalArgumentException e) {
            eq(message, e.getMessage());
            return;
        }
        throw new AssertionError("expected IllegalArgumentException: " + message);
    }

    private static Interval iv(long lo, long hi) {
        return new Interval(lo, hi);
    }

    private static List<Interval> list(String text) {
        return Intervals.parseList(text);
    }

    private static String fmt(List<Interval> xs) {
        return Intervals.format(xs);
    }

    public static void main(String[] args) {
        test("interval.length", () -> eq(4L, iv(3, 7).length()));
        test("interval.empty_when_lo_equals_hi", () -> eq(true, iv(5, 5).isEmpty()));
        test("interval.contains_lo_not_hi", () -> eq(Arrays.asList(true, true, false), Arrays.asList(iv(3, 7).contains(3), iv(3, 7).contains(6), iv(3, 7).contains(7))));
        test("interval.rejects_backwards", () -> throwsIllegal(() -> iv(7, 3), "interval ends before it starts: [7, 3)"));
        test("interval.ordering_by_lo_then_hi", () -> eq(true, iv(1, 9).compareTo(iv(2, 3)) < 0 && iv(1, 3).compareTo(iv(1, 4)) < 0));
        test("parse.half_open", () -> eq(iv(1, 5), Intervals.parse("[1, 5)")));
        test("parse.closed_adds_one", () -> eq(iv(1, 6), Intervals.parse("[1,5]")));
        test("parse.open_start", () -> eq(iv(1, 5), Intervals.parse("(0, 5)")));
        test("parse.negative_bounds", () -> eq(iv(-10, -2), Intervals.parse("[-10, -2)")));
        test("parse.rejects_garbage", () -> throwsIllegal(() -> Intervals.parse("1..5"), "not an interval: 1..5"));
        test("parse.list_with_semicolons", () -> eq("[1, 3) [5, 8)", fmt(list("[1,3); [5,8)"))));
        test("parse.list_rejects_stray_text", () -> throwsIllegal(() -> list("[1,3) and [5,8)"), "not an interval: and"));
        test("parse.list_closed_ranges_join", () -> eq("[1, 10)", fmt(list("[1,4] [5,9]"))));
        test("format.empty_is_none", () -> eq("(none)", fmt(new ArrayList<>())));
        test("format.clock", () -> eq("09:05", Intervals.clock(545)));
        test("format.clock_list", () -> eq("09:00-12:00, 13:00-17:30", Intervals.formatClock(list("[540,720) [780,1050)"))));
        test("format.clock_closed", () -> eq("closed", Intervals.formatClock(new ArrayList<>())));
        test("merge.sorts", () -> eq("[1, 2) [5, 6)", fmt(Intervals.merge(Arrays.asList(iv(5, 6), iv(1, 2))))));
        test("merge.overlapping", () -> eq("[1, 9)", fmt(Intervals.merge(Arrays.asList(iv(1, 5), iv(3, 9))))));
        test("merge.nested", () -> eq("[1, 9)", fmt(Intervals.merge(Arrays.asList(iv(1, 9), iv(3, 4))))));
        test("merge.touching_half_open", () -> eq("[1, 9)", fmt(Intervals.merge(Arrays.asList(iv(1, 5), iv(5, 9))))));
        test("merge.drops_empty", () -> eq("[1, 2)", fmt(Intervals.merge(Arrays.asList(iv(4, 4), iv(1, 2))))));
        test("merge.apart_stay_apart", () -> eq("[1, 4) [5, 9)", fmt(Intervals.merge(Arrays.asList(iv(5, 9), iv(1, 4))))));
        test("union.disjoint", () -> eq("[1, 2) [3, 4)", fmt(Intervals.union(list("[1,2)"), list("[3,4)")))));
        test("union.overlapping", () -> eq("[1, 6)", fmt(Intervals.union(list("[1,4)"), list("[2,6)")))));
        test("intersect.overlap", () -> eq("[3, 5)", fmt(Intervals.intersect(list("[1,5)"), list("[3,9)")))));
        test("intersect.several", () -> eq("[2, 3) [5, 6) [8, 9)", fmt(Intervals.intersect(list("[0,3) [5,9)"), list("[2,6) [8,12)")))));
        test("intersect.touching_is_empty", () -> eq("(none)", fmt(Intervals.intersect(list("[1,5)"), list("[5,9)")))));
        test("intersect.disjoint", () -> eq("(none)", fmt(Intervals.intersect(list("[1,2)"), list("[7,9)")))));
        test("subtract.middle", () -> eq("[1, 3) [6, 10)", fmt(Intervals.subtract(list("[1,10)"), list("[3,6)")))));
        test("subtract.everything", () -> eq("(none)", fmt(Intervals.subtract(list("[2,4)"), list("[0,10)")))));
        test("subtract.several", () -> eq("[0, 1) [2, 3) [9, 10)", fmt(Intervals.subtract(list("[0,10)"), list("[1,2) [3,9)")))));
        test("gaps.in_a_day", () -> eq("[0, 540) [720, 780) [1050, 1440)", fmt(Intervals.gaps(list("[540,720) [780,1050)"), iv(0, 1440)))));
        test("total.length", () -> eq(450L, Intervals.totalLength(list("[540,720) [780,1050)"))));
        test("contains.inside", () -> eq(true, Intervals.contains(list("[1,5) [10,20)"), 12)));
        test("contains.between", () -> eq(false, Intervals.contains(list("[1,5) [10,20)"), 7)));
        test("contains.lower_bound_included", () -> eq(true, Intervals.contains(list("[1,5) [10,20)"), 10)));
        test("contains.upper_bound_excluded", () -> eq(false, Intervals.contains(list("[1,5) [10,20)"), 5)));
        test("free.first_fit", () -> eq(iv(720, 750), Intervals.firstFree(list("[540,720) [780,1050)"), iv(600, 1200), 30)));
        test("free.none_long_enough", () -> eq(null, Intervals.firstFree(list("[0,1440)"), iv(480, 1200), 30)));
        test("rooms.hours_are_normalised", () -> {
            for (String[] r : Intervals.ROOMS) {
                List<Interval> h = Intervals.openingHours(r[0]);
                eq(h, Intervals.merge(h));
            }
        });
        test("rooms.unknown", () -> throwsIllegal(() -> Intervals.openingHours("nowhere"), "no such room: nowhere"));
        test("rooms.open_early_morning", () -> eq(0, Intervals.roomsOpenFor(iv(300, 360)).size()));

        String filter = args.length > 0 ? args[0] : "";
        int run = 0;
        int failures = 0;
        for (int i = 0; i < names.size(); i++) {
            if (!names.get(i).startsWith(filter)) {
                continue;
            }
            run++;
            try {
                bodies.get(i).run();
                System.out.println("PASS " + names.get(i));
            } catch (Throwable t) {
                failures++;
                System.out.println("FAIL " + names.get(i) + ": " + t.getMessage());
            }
        }
        System.out.println();
        System.out.println("Tests run: " + run + ", Failures: " + failures);
        System.exit(failures == 0 ? 0 : 1);
    }
}
`;

// --- rust/src/lib.rs ------------------------------------------------------------------

// name, requirement, version, whether it matches
const REQ_CASES: [string, string, string, boolean][] = [
  ["caret_major", "^1.2.3", "1.9.0", true],
  ["caret_major_upper", "^1.2.3", "2.0.0", false],
  ["caret_major_lower", "^1.2.3", "1.2.2", false],
  ["caret_partial", "^1.2", "1.2.0", true],
  ["caret_zero_minor", "^0.2.3", "0.2.9", true],
  ["caret_zero_minor_upper", "^0.2.3", "0.3.0", false],
  ["caret_zero_zero_patch", "^0.0.3", "0.0.4", false],
  ["caret_zero_only", "^0", "0.9.9", true],
  ["tilde_minor", "~1.2.3", "1.2.9", true],
  ["tilde_minor_upper", "~1.2.3", "1.3.0", false],
  ["tilde_major_only", "~1", "1.9.9", true],
  ["tilde_major_only_upper", "~1", "2.0.0", false],
  ["wildcard_minor", "1.*", "1.5.0", true],
  ["wildcard_minor_upper", "1.*", "2.0.0", false],
  ["wildcard_patch", "1.2.x", "1.2.7", true],
  ["wildcard_any", "*", "0.0.1", true],
  ["exact_full", "=1.2.3", "1.2.3", true],
  ["exact_full_other", "=1.2.3", "1.2.4", false],
  ["exact_partial", "=1.2", "1.2.7", true],
  ["gt_partial", ">1.2", "1.2.9", false],
  ["gt_partial_next", ">1.2", "1.3.0", true],
  ["le_partial", "<=1.2", "1.2.9", true],
  ["lt_full", "<1.2.3", "1.2.3", false],
  ["range_inside", ">=1.0, <1.5", "1.4.9", true],
  ["range_upper", ">=1.0, <1.5", "1.5.0", false],
  ["default_is_caret", "1.2", "1.9.0", true],
  ["prerelease_needs_opt_in", "^1.2.0", "1.3.0-beta.1", false],
  ["prerelease_same_triple", ">=1.3.0-beta.1", "1.3.0-beta.2", true],
  ["prerelease_numeric_order", ">=1.0.0-alpha.2", "1.0.0-alpha.10", true],
];

function libRs(): string {
  const cases = REQ_CASES.map(([name, req, v, ok]) =>
    L(`    #[test]`, `    fn req_${name}() {`, `        check(${JSON.stringify(req)}, ${JSON.stringify(v)}, ${ok});`, `    }`),
  ).join("\n");
  return String.raw`//! verspec: semantic versions (2.0.0) and the version requirements that
//! package manifests write: ^1.2, ~0.3.1, >=1.0, <2.0, 1.*.
//!
//! ${BT3}
//! use verspec::{Req, Version};
//! let v = Version::parse("1.4.0").unwrap();
//! assert!(Req::parse("^1.2").unwrap().matches(&v));
//! assert!(!Req::parse("~1.2").unwrap().matches(&v));
//! ${BT3}

use std::cmp::Ordering;
use std::fmt;

/// One dot-separated identifier of a pre-release: numeric or alphanumeric.
/// Numeric identifiers compare as numbers and come before alphanumeric ones.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Ident {
    Num(u64),
    Alpha(String),
}

impl Ord for Ident {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Ident::Num(a), Ident::Num(b)) => a.cmp(b),
            (Ident::Num(_), Ident::Alpha(_)) => Ordering::Less,
            (Ident::Alpha(_), Ident::Num(_)) => Ordering::Greater,
            (Ident::Alpha(a), Ident::Alpha(b)) => a.cmp(b),
        }
    }
}

impl PartialOrd for Ident {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ident::Num(n) => write!(f, "{}", n),
            Ident::Alpha(s) => write!(f, "{}", s),
        }
    }
}

/// What is wrong with a version or a requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    Empty,
    BadNumber(String),
    LeadingZero(String),
    BadIdent(String),
    MissingPart(String),
    TooManyParts(String),
    BadOp(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Empty => write!(f, "empty version"),
            Error::BadNumber(s) => write!(f, "not a number: {:?}", s),
            Error::LeadingZero(s) => write!(f, "leading zero in {:?}", s),
            Error::BadIdent(s) => write!(f, "bad identifier: {:?}", s),
            Error::MissingPart(s) => write!(f, "expected major.minor.patch: {:?}", s),
            Error::TooManyParts(s) => write!(f, "too many parts: {:?}", s),
            Error::BadOp(s) => write!(f, "unknown operator in {:?}", s),
        }
    }
}

impl std::error::Error for Error {}

/// A version: major.minor.patch, then an optional pre-release (-rc.1) and
/// build metadata (+build.5), which does not count for precedence.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: Vec<Ident>,
    pub build: Vec<String>,
}

fn parse_num(s: &str) -> Result<u64, Error> {
    if s.is_empty() {
        return Err(Error::Empty);
    }
    if !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::BadNumber(s.to_string()));
    }
    if s.len() > 1 && s.starts_with('0') {
        return Err(Error::LeadingZero(s.to_string()));
    }
    s.parse().map_err(|_| Error::BadNumber(s.to_string()))
}

fn valid_ident(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

fn parse_ident(s: &str) -> Result<Ident, Error> {
    if !valid_ident(s) {
        return Err(Error::BadIdent(s.to_string()));
    }
    Ok(Ident::Alpha(s.to_string()))
}

fn parse_pre(s: &str) -> Result<Vec<Ident>, Error> {
    s.split('.').map(parse_ident).collect()
}

impl Version {
    pub fn new(major: u64, minor: u64, patch: u64) -> Version {
        Version { major, minor, patch, pre: Vec::new(), build: Vec::new() }
    }

    /// Parses "1.2.3", "1.2.3-rc.1", "1.2.3+build.5", with an optional "v".
    pub fn parse(text: &str) -> Result<Version, Error> {
        let s = text.strip_prefix('v').unwrap_or(text);
        if s.is_empty() {
            return Err(Error::Empty);
        }
        let (s, build) = match s.split_once('+') {
            Some((a, b)) => {
                let build: Vec<String> = b.split('.').map(str::to_string).collect();
                if !build.iter().all(|x| valid_ident(x)) {
                    return Err(Error::BadIdent(b.to_string()));
                }
                (a, build)
            }
            None => (s, Vec::new()),
        };
        let (core, pre) = match s.split_once('-') {
            Some((a, p)) => (a, parse_pre(p)?),
            None => (s, Vec::new()),
        };
        let parts: Vec<&str> = core.split('.').collect();
        if parts.len() < 3 {
            return Err(Error::MissingPart(text.to_string()));
        }
        if parts.len() > 3 {
            return Err(Error::TooManyParts(text.to_string()));
        }
        Ok(Version {
            major: parse_num(parts[0])?,
            minor: parse_num(parts[1])?,
            patch: parse_num(parts[2])?,
            pre,
            build,
        })
    }

    pub fn is_prerelease(&self) -> bool {
        !self.pre.is_empty()
    }

    /// The order of precedence: the numbers, then a pre-release before the
    /// release, then the pre-release identifiers in turn. Build metadata
    /// does not count.
    pub fn cmp_precedence(&self, other: &Version) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => self.pre.cmp(&other.pre),
            })
    }

    pub fn bump_major(&self) -> Version {
        Version::new(self.major + 1, 0, 0)
    }

    pub fn bump_minor(&self) -> Version {
        Version::new(self.major, self.minor + 1, 0)
    }

    pub fn bump_patch(&self) -> Version {
        if self.is_prerelease() {
            return Version::new(self.major, self.minor, self.patch);
        }
        Version::new(self.major, self.minor, self.patch + 1)
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.cmp_precedence(other).then_with(|| self.build.cmp(&other.build))
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            let pre: Vec<String> = self.pre.iter().map(|i| i.to_string()).collect();
            write!(f, "-{}", pre.join("."))?;
        }
        if !self.build.is_empty() {
            write!(f, "+{}", self.build.join("."))?;
        }
        Ok(())
    }
}

// --- Requirements -------------------------------------------------------------

/// The operator of one bound of a requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Ge,
    Gt,
    Le,
    Lt,
}

/// One bound: an operator and a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    pub op: Op,
    pub version: Version,
}

impl Bound {
    fn holds(&self, v: &Version) -> bool {
        let c = v.cmp_precedence(&self.version);
        match self.op {
            Op::Ge => c != Ordering::Less,
            Op::Gt => c == Ordering::Greater,
            Op::Le => c != Ordering::Greater,
            Op::Lt => c == Ordering::Less,
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.op {
            Op::Ge => ">=",
            Op::Gt => ">",
            Op::Le => "<=",
            Op::Lt => "<",
        };
        write!(f, "{}{}", op, self.version)
    }
}

/// A requirement: bounds that must all hold. "*" has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Req {
    pub bounds: Vec<Bound>,
}

/// A version as a requirement writes it, with parts left out or wildcards.
struct Partial {
    major: Option<u64>,
    minor: Option<u64>,
    patch: Option<u64>,
    pre: Vec<Ident>,
}

fn parse_partial(s: &str) -> Result<Partial, Error> {
    let s = s.trim();
    let s = s.strip_prefix('v').unwrap_or(s);
    if s.is_empty() {
        return Err(Error::Empty);
    }
    let (core, pre) = match s.split_once('-') {
        Some((a, p)) => (a, parse_pre(p)?),
        None => (s, Vec::new()),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() > 3 {
        return Err(Error::TooManyParts(s.to_string()));
    }
    let mut nums = [None, None, None];
    for (i, p) in parts.iter().enumerate() {
        if *p == "*" || *p == "x" || *p == "X" {
            break;
        }
        nums[i] = Some(parse_num(p)?);
    }
    Ok(Partial { major: nums[0], minor: nums[1], patch: nums[2], pre })
}

fn lower(p: &Partial) -> Version {
    Version {
        major: p.major.unwrap_or(0),
        minor: p.minor.unwrap_or(0),
        patch: p.patch.unwrap_or(0),
        pre: p.pre.clone(),
        build: Vec::new(),
    }
}

/// The first version past every one the partial version covers: 1.2 → 1.3.0.
fn next(p: &Partial) -> Option<Version> {
    match (p.major, p.minor, p.patch) {
        (None, _, _) => None,
        (Some(major), None, _) => Some(Version::new(major + 1, 0, 0)),
        (Some(major), Some(minor), None) => Some(Version::new(major, minor + 1, 0)),
        (Some(major), Some(minor), Some(patch)) => Some(Version::new(major, minor, patch + 1)),
    }
}

fn ge(v: Version) -> Bound {
    Bound { op: Op::Ge, version: v }
}

fn lt(v: Version) -> Bound {
    Bound { op: Op::Lt, version: v }
}

/// ^1.2.3 is >=1.2.3, <2.0.0: changes that do not modify the left-most
/// non-zero part. ^0.2.3 is >=0.2.3, <0.3.0; ^0.0.3 is =0.0.3.
fn caret(p: &Partial) -> Vec<Bound> {
    let Some(major) = p.major else { return Vec::new() };
    let hi = Version::new(major + 1, 0, 0);
    vec![ge(lower(p)), lt(hi)]
}

/// ~1.2.3 is >=1.2.3, <1.3.0; ~1 is >=1.0.0, <2.0.0.
fn tilde(p: &Partial) -> Vec<Bound> {
    let Some(major) = p.major else { return Vec::new() };
    let hi = match p.minor {
        Some(minor) => Version::new(major, minor + 1, 0),
        None => Version::new(major + 1, 0, 0),
    };
    vec![ge(lower(p)), lt(hi)]
}

/// =1.2 (or 1.2.*) is every 1.2.x: >=1.2.0, <1.3.0.
fn exact(p: &Partial) -> Vec<Bound> {
    match next(p) {
        None => Vec::new(),
        Some(hi) => vec![ge(lower(p)), lt(hi)],
    }
}

impl Req {
    /// Parses comma-separated comparators; a bare version is a caret one.
    pub fn parse(text: &str) -> Result<Req, Error> {
        let mut bounds = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            let (op, rest) = [">=", "<=", ">", "<", "=", "^", "~"]
                .iter()
                .find(|op| part.starts_with(**op))
                .map(|op| (*op, &part[op.len()..]))
                .unwrap_or(("", part));
            if op.is_empty() && !part.starts_with(|c: char| c.is_ascii_digit() || c == '*' || c == 'v') {
                return Err(Error::BadOp(part.to_string()));
            }
            let p = parse_partial(rest)?;
            let wild = rest.contains('*') || rest.contains('x') || rest.contains('X');
            bounds.extend(match op {
                "" if wild => exact(&p),
                "" | "^" => caret(&p),
                "~" => tilde(&p),
                "=" => exact(&p),
                ">=" => vec![ge(lower(&p))],
                "<" => vec![lt(lower(&p))],
                ">" => match (p.patch, next(&p)) {
                    (Some(_), _) => vec![Bound { op: Op::Gt, version: lower(&p) }],
                    (None, Some(hi)) => vec![ge(hi)],
                    (None, None) => vec![lt(Version::new(0, 0, 0))],
                },
                "<=" => match (p.patch, next(&p)) {
                    (Some(_), _) => vec![Bound { op: Op::Le, version: lower(&p) }],
                    (None, Some(hi)) => vec![lt(hi)],
                    (None, None) => Vec::new(),
                },
                _ => unreachable!(),
            });
        }
        Ok(Req { bounds })
    }

    /// Whether v meets every bound. A pre-release meets a requirement only if
    /// some bound names a pre-release of the same major.minor.patch.
    pub fn matches(&self, v: &Version) -> bool {
        if !self.bounds.iter().all(|b| b.holds(v)) {
            return false;
        }
        !v.is_prerelease()
            || self.bounds.iter().any(|b| {
                b.version.is_prerelease()
                    && (b.version.major, b.version.minor, b.version.patch) == (v.major, v.minor, v.patch)
            })
    }

    /// The greatest of the versions that meet the requirement.
    pub fn max_satisfying<'a>(&self, versions: &'a [Version]) -> Option<&'a Version> {
        versions.iter().filter(|v| self.matches(v)).max_by(|a, b| a.cmp_precedence(b))
    }
}

impl fmt::Display for Req {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.bounds.is_empty() {
            return write!(f, "*");
        }
        let parts: Vec<String> = self.bounds.iter().map(|b| b.to_string()).collect();
        write!(f, "{}", parts.join(", "))
    }
}

/// Sorts versions by precedence, oldest first.
pub fn sort_versions(versions: &mut [Version]) {
    versions.sort();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    fn check(req: &str, version: &str, expect: bool) {
        let r = Req::parse(req).unwrap();
        assert_eq!(r.matches(&v(version)), expect, "{} against {} (bounds: {})", req, version, r);
    }

    #[test]
    fn parse_simple() {
        assert_eq!(v("1.2.3"), Version::new(1, 2, 3));
    }

    #[test]
    fn parse_v_prefix() {
        assert_eq!(v("v0.10.0"), Version::new(0, 10, 0));
    }

    #[test]
    fn parse_trims_whitespace() {
        assert_eq!(Version::parse(" 1.2.3\n"), Ok(Version::new(1, 2, 3)));
    }

    #[test]
    fn parse_prerelease_idents() {
        let got = v("1.0.0-rc.1.x-y");
        assert_eq!(got.pre, vec![Ident::Alpha("rc".into()), Ident::Num(1), Ident::Alpha("x-y".into())]);
    }

    #[test]
    fn parse_build() {
        assert_eq!(v("1.0.0+build.5").build, vec!["build".to_string(), "5".to_string()]);
    }

    #[test]
    fn parse_rejects_leading_zero() {
        assert_eq!(Version::parse("1.02.3"), Err(Error::LeadingZero("02".into())));
    }

    #[test]
    fn parse_rejects_missing_part() {
        assert_eq!(Version::parse("1.2"), Err(Error::MissingPart("1.2".into())));
    }

    #[test]
    fn parse_rejects_bad_ident() {
        assert_eq!(Version::parse("1.2.3-rc..1"), Err(Error::BadIdent("".into())));
    }

    #[test]
    fn display_roundtrip() {
        for s in ["1.2.3", "0.0.1-alpha.7", "2.0.0-rc.1+exp.sha.5114f85", "10.20.30+build"] {
            assert_eq!(v(s).to_string(), s);
        }
    }

    #[test]
    fn cmp_prerelease_numeric() {
        let chain = [
            "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
            "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0",
        ];
        for w in chain.windows(2) {
            assert!(v(w[0]) < v(w[1]), "{} < {}", w[0], w[1]);
        }
    }

    #[test]
    fn cmp_build_ignored_for_precedence() {
        assert_eq!(v("1.0.0+a").cmp_precedence(&v("1.0.0+b")), Ordering::Equal);
    }

    #[test]
    fn bump_minor_clears_pre() {
        assert_eq!(v("1.4.2-rc.1").bump_minor(), Version::new(1, 5, 0));
    }

    #[test]
    fn bump_patch_of_prerelease_is_release() {
        assert_eq!(v("1.4.2-rc.1").bump_patch(), Version::new(1, 4, 2));
    }

    #[test]
    fn req_display() {
        assert_eq!(Req::parse("^1.2").unwrap().to_string(), ">=1.2.0, <2.0.0");
    }

    #[test]
    fn req_rejects_bad_op() {
        assert_eq!(Req::parse("!1.2"), Err(Error::BadOp("!1.2".into())));
    }

    #[test]
    fn req_max_satisfying() {
        let vs: Vec<Version> = ["1.2.0", "1.9.3", "2.0.0", "1.10.0-beta.1"].iter().map(|s| v(s)).collect();
        assert_eq!(Req::parse("^1.2").unwrap().max_satisfying(&vs), Some(&v("1.9.3")));
    }

    #[test]
    fn sort_by_precedence() {
        let mut vs: Vec<Version> = ["2.0.0", "1.0.0", "1.0.0-rc.1", "0.9.12"].iter().map(|s| v(s)).collect();
        sort_versions(&mut vs);
        let got: Vec<String> = vs.iter().map(|x| x.to_string()).collect();
        assert_eq!(got, ["0.9.12", "1.0.0-rc.1", "1.0.0", "2.0.0"]);
    }

${cases}}
`;
}

// --- tools/units.py -------------------------------------------------------------------

const unitsPy = String.raw`"""Units: parse and format durations, sizes and rates for the ops scripts.

Every function has its examples, which are its tests:

    python3 -m doctest -v tools/units.py
"""

import re

_DURATION_UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_DURATION_PART = re.compile(r"(\d+)([wdhms])")
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([KMGTP]?)(i?B)?$", re.IGNORECASE)
_BINARY = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]


def parse_duration(text):
    """Seconds in a duration such as 1h30m, 90s or 2d 4h.

    >>> parse_duration("90s")
    90
    >>> parse_duration("1h30m")
    5400
    >>> parse_duration("2d 4h")
    187200
    >>> parse_duration("1w")
    604800
    >>> parse_duration("soon")
    Traceback (most recent call last):
        ...
    ValueError: not a duration: 'soon'
    """
    s = text.replace(" ", "").lower()
    m = _DURATION_PART.match(s)
    if not m:
        raise ValueError("not a duration: %r" % text)
    return int(m.group(1)) * _DURATION_UNITS[m.group(2)]


def format_duration(seconds):
    """A number of seconds the way parse_duration reads it back.

    >>> format_duration(5400)
    '1h30m'
    >>> format_duration(90061)
    '1d1h1m1s'
    >>> format_duration(0)
    '0s'
    """
    if seconds == 0:
        return "0s"
    out = []
    for unit in "dhms":
        n, seconds = divmod(seconds, _DURATION_UNITS[unit])
        if n:
            out.append("%d%s" % (n, unit))
    return "".join(out)


def parse_size(text):
    """Bytes in a size: 512, 1.5K, 10MB, 2GiB (powers of 1024 throughout).

    >>> parse_size("512")
    512
    >>> parse_size("1.5K")
    1536
    >>> parse_size("10MB")
    10485760
    >>> parse_size("2 GiB")
    2147483648
    >>> parse_size("lots")
    Traceback (most recent call last):
        ...
    ValueError: not a size: 'lots'
    """
    m = _SIZE.match(text.strip())
    if not m:
        raise ValueError("not a size: %r" % text)
    number, prefix = float(m.group(1)), m.group(2).upper()
    power = " KMGTP".index(prefix) if prefix else 0
    return int(number * 1024 ** power)


def format_bytes(n):
    """A size in binary units with one decimal: what df -h would say.

    >>> format_bytes(512)
    '512 B'
    >>> format_bytes(1536)
    '1.5 KiB'
    >>> format_bytes(5000)
    '4.9 KiB'
    >>> format_bytes(123456789)
    '117.7 MiB'
    >>> format_bytes(1048576)
    '1.0 MiB'
    """
    if n < 1024:
        return "%d B" % n
    value = float(n)
    unit = 0
    while value >= 1024 and unit < len(_BINARY) - 1:
        value = value / 1000
        unit += 1
    return "%.1f %s" % (value, _BINARY[unit])


def parse_rate(text):
    """Events per second in a rate: 100/s, 6000/m, 2/h.

    >>> parse_rate("100/s")
    100.0
    >>> parse_rate("6000/m")
    100.0
    >>> round(parse_rate("2/h"), 6)
    0.000556
    """
    count, _, per = text.partition("/")
    return float(count) / _DURATION_UNITS[per.strip() or "s"]


def human_count(n):
    """A count for a dashboard: 950, 1.2k, 3.4M.

    >>> human_count(950)
    '950'
    >>> human_count(1234)
    '1.2k'
    >>> human_count(3400000)
    '3.4M'
    """
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= limit:
            return "%.1f%s" % (n / limit, suffix)
    return str(n)


def percent(part, whole):
    """A share as a percentage with one decimal; 0 of 0 is 0.0 %.

    >>> percent(1, 3)
    '33.3 %'
    >>> percent(0, 0)
    '0.0 %'
    """
    return "%.1f %%" % (100.0 * part / whole if whole else 0.0)


def clamp(x, lo, hi):
    """x, brought within [lo, hi].

    >>> [clamp(x, 0, 10) for x in (-5, 5, 15)]
    [0, 5, 10]
    """
    return max(lo, min(hi, x))
`;

// --- native/ --------------------------------------------------------------------------

const nativeBuildSh = String.raw`#!/bin/sh
# Build libcrc: generate the CRC tables, compile every unit, archive them,
# then link and run the self-test. Each command is printed, ninja-style.
set -e
cd "$(dirname "$0")"
CC=gcc
CFLAGS="-std=c11 -O2 -Wall -Wextra -Iinclude"
rm -rf build gen
mkdir -p build gen
python3 gen_tables.py gen
units=$(ls gen/*.c src/*.c)
total=$(( $(echo "$units" | wc -l) + 2 ))
n=0
for f in $units; do
    n=$((n + 1))
    o=build/$(basename "$f" .c).o
    echo "[$n/$total] $CC $CFLAGS -c $f -o $o"
    $CC $CFLAGS -c "$f" -o "$o"
done
n=$((n + 1))
echo "[$n/$total] ar rcs build/libcrc.a build/*.o"
ar rcs build/libcrc.a build/*.o
n=$((n + 1))
echo "[$n/$total] $CC $CFLAGS -o build/selftest tests/selftest.c build/libcrc.a"
$CC $CFLAGS -o build/selftest tests/selftest.c build/libcrc.a
./build/selftest
`;

const genTablesPy = String.raw`"""Write one C unit per CRC-32 variant: its reflected polynomial's 256-entry
table, as crc_tab_NN. The known polynomials come first; the rest are the
variants the checksum survey measures, derived from CRC-32's."""

import os
import sys

KNOWN = [
    ("CRC-32", 0xEDB88320),
    ("CRC-32C", 0x82F63B78),
    ("CRC-32K", 0xEB31D82E),
    ("CRC-32Q", 0xD5828281),
    ("CRC-32/XFER", 0x000001AF),
]
COUNT = 64


def polys():
    out = list(KNOWN)
    k = 1
    while len(out) < COUNT:
        out.append(("variant %d" % k, (0xEDB88320 ^ (k * 0x9E3779B1)) & 0xFFFFFFFF | 0x80000000))
        k += 1
    return out


def table(poly):
    out = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        out.append(c)
    return out


def unit(n, name, poly):
    rows = []
    t = table(poly)
    for i in range(0, 256, 6):
        rows.append("    " + ", ".join("0x%08xu" % x for x in t[i:i + 6]) + ",")
    lines = [
        "/* Generated by gen_tables.py: %s, reflected polynomial 0x%08x. */" % (name, poly),
        "#include <stdint.h>",
        "",
    ]
    if n % 8 == 7:
        # The survey's folding step, kept with the table it was measured on.
        lines += [
            "static uint32_t fold_%02d(uint32_t c)" % n,
            "{",
            "    return (c >> 16) ^ (c & 0xffffu);",
            "}",
            "",
        ]
    lines += ["const uint32_t crc_tab_%02d[256] = {" % n] + rows + ["};", ""]
    return "\n".join(lines)


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    for n, (name, poly) in enumerate(polys()):
        path = os.path.join(outdir, "crc_tab_%02d.c" % n)
        with open(path, "w") as f:
            f.write(unit(n, name, poly))
        print("gen_tables: %s  %-12s poly 0x%08x" % (path, name, poly))
    print("gen_tables: %d tables" % COUNT)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gen")
`;

const crcH = String.raw`#ifndef CRC_H
#define CRC_H

#include <stddef.h>
#include <stdint.h>

/* The tables gen_tables.py writes: 0 is CRC-32, 1 is CRC-32C. */
extern const uint32_t crc_tab_00[256];
extern const uint32_t crc_tab_01[256];

/* CRC-32 (zlib's) and CRC-32C (Castagnoli), bit by bit and by table. */
uint32_t crc32_bitwise(const void *data, size_t len);
uint32_t crc32_table(const void *data, size_t len);
uint32_t crc32c_bitwise(const void *data, size_t len);
uint32_t crc32c_table(const void *data, size_t len);

#endif
`;

const crcC = String.raw`#include "crc.h"

static uint32_t bitwise(uint32_t poly, const unsigned char *p, size_t len)
{
    uint32_t crc = 0xFFFFFFFFu;
    while (len--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = (crc & 1) ? (crc >> 1) ^ poly : crc >> 1;
    }
    return crc ^ 0xFFFFFFFFu;
}

static uint32_t by_table(const uint32_t *tab, const unsigned char *p, size_t len)
{
    uint32_t crc = 0xFFFFFFFFu;
    while (len--)
        crc = tab[(crc ^ *p++) & 0xFFu] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu
}

uint32_t crc32_bitwise(const void *data, size_t len)
{
    return bitwise(0xEDB88320u, data, len);
}

uint32_t crc32_table(const void *data, size_t len)
{
    return by_table(crc_tab_00, data, len);
}

uint32_t crc32c_bitwise(const void *data, size_t len)
{
    return bitwise(0x82F63B78u, data, len);
}

uint32_t crc32c_table(const void *data, size_t len)
{
    return by_table(crc_tab_01, data, len);
}
`;

const selftestC = String.raw`#include <stdio.h>
#include <string.h>
#include "crc.h"

static int checks, failed;

static void check(const char *what, uint32_t got, uint32_t want)
{
    checks++;
    if (got == want) {
        printf("ok   %-34s %08x\n", what, got);
    } else {
        failed++;
        printf("FAIL %-34s %08x, want %08x\n", what, got, want);
    }
}

int main(void)
{
    const char *nine = "123456789";
    unsigned char buf[1000];
    unsigned x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (unsigned char)(x >> 16);
    }
    check("crc32 of 123456789, bitwise", crc32_bitwise(nine, 9), 0xcbf43926u);
    check("crc32 of 123456789, table", crc32_table(nine, 9), 0xcbf43926u);
    check("crc32c of 123456789, bitwise", crc32c_bitwise(nine, 9), 0xe3069283u);
    check("crc32c of 123456789, table", crc32c_table(nine, 9), 0xe3069283u);
    check("crc32 of the empty string", crc32_table("", 0), 0);
    check("crc32 of a", crc32_table("a", 1), 0xe8b7be43u);
    check("crc32, table against bitwise", crc32_table(buf, sizeof buf), crc32_bitwise(buf, sizeof buf));
    check("crc32c, table against bitwise", crc32c_table(buf, sizeof buf), crc32c_bitwise(buf, sizeof buf));
    printf("selftest: %d checks, %d failed\n", checks, failed);
    return failed ? 1 : 0;
}
`;

// --- The wrappers -----------------------------------------------------------------------

const makefile = L(
  "# One entry point for every suite: make check (or ./check.sh, or npm test).",
  "# T= narrows a run: make java-test T=merge, make rust-test T=parse.",
  "",
  `export RUSTUP_HOME ?= ${RUSTUP_HOME}`,
  "export CARGO_TARGET_DIR := $(CURDIR)/rust/target",
  "",
  "JAVA_SRC := $(wildcard java/src/calc/*.java) $(wildcard java/test/calc/*.java)",
  "",
  ".PHONY: check perl-test java-test rust-test doctest native",
  "",
  "check: perl-test java-test rust-test doctest native",
  "",
  "perl-test:",
  "\tcd perl && prove -l t/",
  "",
  "java-test:",
  "\tjavac -d java/build $(JAVA_SRC)",
  "\tjava -cp java/build calc.IntervalsTest $(T)",
  "",
  "rust-test:",
  "\tcd rust && cargo test --offline $(T)",
  "",
  "doctest:",
  "\tpython3 -m doctest tools/units.py && echo 'doctest: tools/units.py passed'",
  "",
  "native:",
  "\t./native/build.sh",
);

const packageJson = JSON.stringify(
  {
    name: "polyglot-tools",
    version: "0.4.0",
    private: true,
    description: "The warehouse's tools: inventory (Perl), the booking calendar (Java), verspec (Rust), libcrc (C), units (Python).",
    scripts: {
      test: "./check.sh",
      "test:java": "make -s java-test",
      "test:rust": "make -s rust-test",
      "test:perl": "make -s perl-test",
      doctest: "python3 -m doctest -v tools/units.py",
      build: "./native/build.sh",
    },
  },
  null,
  2,
) + "\n";

const checkSh = String.raw`#!/bin/sh
# Run every suite, keep each one's log under .check/, and say which failed.
# Exit status: 0 when all passed, 1 otherwise.
cd "$(dirname "$0")"
mkdir -p .check
failed=""
count=0
run() {
    name=$1
    shift
    count=$((count + 1))
    if "$@" > ".check/$name.log" 2>&1; then
        echo "ok      $name"
    else
        echo "FAILED  $name (exit $?), the end of .check/$name.log:"
        tail -n 6 ".check/$name.log" | sed 's/^/    | /'
        failed="$failed $name"
    fi
}
run perl make -s perl-test
run java make -s java-test
run rust make -s rust-test
run doctest make -s doctest
run native make -s native
if [ -n "$failed" ]; then
    echo "check: $(echo $failed | wc -w) of $count suites failed:$failed"
    exit 1
fi
echo "check: all $count suites passed"
`;

// One test thread, so that libtest lists the tests in the same order in every run.
const cargoConfig = L("[build]", 'target-dir = "target"', "", "[env]", 'RUST_TEST_THREADS = "1"');

const cargoToml = L("[package]", 'name = "verspec"', 'version = "0.1.0"', 'edition = "2021"', "", "[dependencies]");

// --- the session -------------------------------------------------------------------------

export function polyglot(p: string): Scenario {
  const at = (f: string) => join(p, f);
  const git = "git -c user.email=a@b -c user.name=a";
  let day = 0;
  // Fixed dates, so that commit hashes are the same in every run.
  const commit = (msg: string) => {
    day++;
    const d = `2024-06-${String(day).padStart(2, "0")}T10:00:00+0000`;
    return `git add -A && GIT_AUTHOR_DATE=${d} GIT_COMMITTER_DATE=${d} ${git} commit -q -m "${msg}" && git log --oneline`;
  };
  const cargo = `RUSTUP_HOME=${RUSTUP_HOME} CARGO_TARGET_DIR=target cargo`;
  const pm = at("perl/lib/Inventory.pm");
  const java = at("java/src/calc/Intervals.java");
  const javaTest = at("java/test/calc/IntervalsTest.java");
  const rs = at("rust/src/lib.rs");
  const units = at("tools/units.py");
  const crc = at("native/src/crc.c");
  const prove = bash("cd perl && prove -l t/", "Run the Perl tests");
  const javaRun = bash("make java-test", "Run the Java tests");
  const rustAll = bash(`cd rust && ${cargo} test --offline`, "Run the Rust tests");
  const rustParse = bash(`cd rust && ${cargo} test --offline parse`, "Run the parse tests");

  return {
    script: [
      // Setting up the project.
      write(at(".gitignore"), L("java/build/", "rust/target/", "native/build/", "native/gen/", ".check/", "__pycache__/", "node_modules/", "opencode.json", ".opencode/")),
      write(at(".npmrc"), L("update-notifier=false", "fund=false", "logs-max=0")),
      write(at("Makefile"), makefile),
      write(at("package.json"), packageJson),
      write(at("check.sh"), checkSh),
      write(pm, inventoryPm()),
      write(at("perl/t/01_parse.t"), perlParseT),
      write(at("perl/t/02_stock.t"), perlStockT),
      write(at("perl/t/03_report.t"), perlReportT),
      write(java, intervalsJava()),
      write(javaTest, intervalsTestJava),
      write(at("rust/Cargo.toml"), cargoToml),
      write(at("rust/.cargo/config.toml"), cargoConfig),
      write(rs, libRs()),
      write(units, unitsPy),
      write(at("native/build.sh"), nativeBuildSh),
      write(at("native/gen_tables.py"), genTablesPy),
      write(at("native/include/crc.h"), crcH),
      write(crc, crcC),
      write(at("native/tests/selftest.c"), selftestC),
      bash(`chmod +x check.sh native/build.sh && git init -q -b main && ${commit("Import the warehouse tools")}`, "Start a repository"),
      bash("git ls-files | sort && git ls-files | wc -l", "List the files"),
      bash("./check.sh", "See where the suites stand"),

      // Perl: three bugs in Inventory.pm, four failing tests in three files.
      prove,
      read(pm),
      bash("cd perl && prove -lv t/02_*.t", "Run the stock tests verbosely"),
      bash("grep -rn 'needs_reorder' perl", "Find needs_reorder"),
      edit(pm, "    return $item->{on_hand} < $item->{reorder_at} ? 1 : 0;\n", "    return $item->{on_hand} <= $item->{reorder_at} ? 1 : 0;\n"),
      bash("cd perl && prove -l t/02_*.t", "Run the stock tests"),
      edit(pm, "    $num =~ s/,//;\n", "    $num =~ s/,//g;\n"),
      bash("make perl-test", "Run the Perl tests"),
      read(at("perl/t/03_report.t")),
      edit(pm, "            sprintf('%-*s', $w[2], $r->[2]),\n", "            sprintf('%*s',  $w[2], $r->[2]),\n"),
      prove,
      read(pm),
      bash(commit("Inventory: reorder at the point, all thousands separators, right-aligned quantities"), "Commit"),

      // Java: three bugs in Intervals.java.
      javaRun,
      read(java),
      read(javaTest),
      read(java),
      bash("grep -rn 'cur.hi\\|iv.hi' java/src", "Find the bound checks"),
      edit(java, "            } else if (x.lo < cur.hi) {\n", "            } else if (x.lo <= cur.hi) {\n"),
      bash("npm run test:java", "Run the Java tests"),
      bash("make java-test T=intersect", "Run the intersection tests"),
      edit(java, "            if (lo <= hi) {\n                out.add(new Interval(lo, hi));\n", "            if (lo < hi) {\n                out.add(new Interval(lo, hi));\n"),
      bash("make java-test 2>&1 | tail -n 20", "Run the Java tests"),
      read(java, 236, 30),
      edit(java, "            } else if (x > iv.hi) {\n", "            } else if (x >= iv.hi) {\n"),
      javaRun,
      bash("java -cp java/build calc.Intervals '[540,720) [700,800)' '[800,900]' && java -cp java/build calc.Intervals hours vega", "Try the command line"),
      bash(commit("Intervals: join touching intervals, no empty intersections, exclusive upper bound"), "Commit"),

      // Rust: three bugs in lib.rs, and a fix that does not compile at first.
      rustAll,
      read(rs),
      rustParse,
      edit(rs, "        let s = text.strip_prefix('v').unwrap_or(text);\n        if s.is_empty() {\n", "        let s = text.trim();\n        let s = s.strip_prefix('v').unwrap_or(s);\n        if s.is_empty() {\n"),
      edit(rs, "    Ok(Ident::Alpha(s.to_string()))\n}\n", "    if s.bytes().all(|b| b.is_ascii_digit()) {\n        return Ok(Ident::Num(s.parse()));\n    }\n    Ok(Ident::Alpha(s.to_string()))\n}\n"),
      rustParse,
      edit(rs, "        return Ok(Ident::Num(s.parse()));\n", "        return parse_num(s).map(Ident::Num);\n"),
      rustParse,
      bash(`cd rust && ${cargo} test --offline 2>&1 | tail -n 20`, "Run the Rust tests"),
      bash("grep -rn 'fn caret\\|caret(' rust/src", "Find caret"),
      read(rs, 320, 30),
      edit(
        rs,
        "    let hi = Version::new(major + 1, 0, 0);\n    vec![ge(lower(p)), lt(hi)]\n}\n\n/// ~1.2.3",
        "    let hi = match (major, p.minor, p.patch) {\n        (0, Some(0), Some(patch)) => Version::new(0, 0, patch + 1),\n        (0, Some(minor), _) => Version::new(0, minor + 1, 0),\n        _ => Version::new(major + 1, 0, 0),\n    };\n    vec![ge(lower(p)), lt(hi)]\n}\n\n/// ~1.2.3",
      ),
      bash("npm run test:rust", "Run the Rust tests"),
      read(rs),
      bash(commit("verspec: trim input, numeric pre-release identifiers, caret below 1.0"), "Commit"),

      // C: a build that fails, then passes, with the generated tables' warnings.
      bash("cd native && ./build.sh", "Build libcrc"),
      read(crc),
      edit(crc, "    return crc ^ 0xFFFFFFFFu\n}", "    return crc ^ 0xFFFFFFFFu;\n}"),
      bash("make native", "Build libcrc"),
      bash("grep -rn 'fold_' native/gen | sort | head -n 20", "Find the unused folds"),
      bash(commit("libcrc: the missing semicolon"), "Commit"),

      // Python: doctests, two bugs.
      bash("python3 -m doctest -v tools/units.py", "Run the doctests"),
      read(units),
      edit(
        units,
        '    m = _DURATION_PART.match(s)\n    if not m:\n        raise ValueError("not a duration: %r" % text)\n    return int(m.group(1)) * _DURATION_UNITS[m.group(2)]\n',
        '    parts = _DURATION_PART.findall(s)\n    if not s or "".join(n + u for n, u in parts) != s:\n        raise ValueError("not a duration: %r" % text)\n    return sum(int(n) * _DURATION_UNITS[u] for n, u in parts)\n',
      ),
      bash("python3 -m doctest tools/units.py || true", "Run the doctests"),
      edit(units, "        value = value / 1000\n", "        value /= 1024\n"),
      bash("make doctest", "Run the doctests"),
      bash("npm run doctest 2>&1 | tail -n 20", "Run the doctests verbosely"),
      bash(commit("units: every part of a duration, binary sizes in powers of 1024"), "Commit"),

      // Everything at once.
      bash("timeout 60 ./check.sh", "Run every suite"),
      bash("npm test", "Run every suite"),

      // Small things to finish.
      bash("git log --oneline", "History"),
      bash("wc -l perl/lib/*.pm perl/t/*.t java/src/calc/*.java java/test/calc/*.java rust/src/*.rs tools/*.py native/src/*.c native/tests/*.c native/*.py", "Count lines"),
      bash("grep -c '^is\\|^like\\|^is_deeply' perl/t/*.t && grep -c 'test(\"' java/test/calc/IntervalsTest.java && grep -c '#\\[test\\]' rust/src/lib.rs", "Count tests"),
      bash("grep -rn 'TODO\\|FIXME\\|XXX' perl java/src rust/src tools native/src || echo 'nothing to do'", "Find TODOs"),
      read(rs),
      bash("perl -Iperl/lib -MInventory=category_of,format_qty -e 'print category_of(\"FUS-0016\"), \" \", format_qty(2400 * 3), \"\\n\"'", "Check a category"),
      bash("python3 -c \"import sys; sys.path.insert(0, 'tools'); import units; print(units.format_bytes(units.parse_size('3.5G')), units.format_duration(units.parse_duration('1d 90m')))\"", "Check the units"),
      bash("node -e \"const p = require('./package.json'); console.log(Object.keys(p.scripts).join(' '))\"", "List the npm scripts"),
      bash("ls native/build | grep -v '^crc_tab' && ls native/build | grep -c '^crc_tab'", "What the build left"),
      bash(`cd rust && ${cargo} test --offline -q req_caret 2>&1 | tail -n 4`, "The caret tests once more"),
      bash("git show --stat HEAD", "The last commit"),
      bash("git diff HEAD~3 --stat", "The last three commits"),
      bash("git status --short && echo clean", "Status"),
    ],
    answer:
      "Done. Every suite passes: the Perl tests (34 in three files; 4 failing at first from three bugs in Inventory.pm), the Java tests (43; 4 failing at first from three bugs in Intervals.java), verspec's 46 Rust tests (6 failing at first from three bugs, and one fix that did not compile), libcrc's build and self-test (a missing semicolon), and the doctests of units.py (4 failing at first from two bugs). ./check.sh and npm test are green.",
  };
}
