// The sessions of the HUD quality evaluation, as scripts of tool calls. The
// real tools run them when eval/capture.ts (to record them) or
// eval/latency.ts (to time the model's findings) drives the real OpenCode.

import { join } from "node:path";
import type { ToolStep } from "../test/fake-model.ts";

/** The real toolchains live under the real home, not the run's fresh one. */
export const toolEnv: Record<string, string> = {
  RUSTUP_HOME: process.env.RUSTUP_HOME ?? join(process.env.HOME ?? "/root", ".rustup"),
  CARGO_HOME: process.env.CARGO_HOME ?? join(process.env.HOME ?? "/root", ".cargo"),
  CARGO_NET_OFFLINE: "true",
  GOFLAGS: "-mod=mod",
  GOTOOLCHAIN: "local",
};

export interface EvalScenario {
  name: string;
  goal: string;
  steps(project: string): ToolStep[];
  /** The main request at which the fake model reports a full context. */
  compactAt?: number;
}

const bash = (command: string): ToolStep => ({ tool: "bash", args: { command, description: "run" } });
const write = (filePath: string, content: string): ToolStep => ({ tool: "write", args: { filePath, content } });
const read = (filePath: string): ToolStep => ({ tool: "read", args: { filePath } });
const edit = (filePath: string, oldString: string, newString: string): ToolStep => ({
  tool: "edit",
  args: { filePath, oldString, newString },
});

const calcPy = `def add(a, b):
    return a + b


def average(xs):
    return sum(xs) // len(xs)


def div(a, b):
    return a * b
`;

const testCalcPy = `import unittest

from calc import add, average, div


class TestCalc(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_add_negative(self):
        self.assertEqual(add(-2, -3), -5)

    def test_average(self):
        self.assertEqual(average([1, 2]), 1.5)

    def test_div(self):
        self.assertEqual(div(6, 3), 2)


if __name__ == "__main__":
    unittest.main()
`;

const statsToml = `[package]
name = "stats"
version = "0.1.0"
edition = "2021"
`;

const statsRs = `pub fn mean(xs: &[f64]) -> f64 {
    let total: f64 = xs.iter().sum();
    total / xs.len()
}

pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_of_three() {
        assert_eq!(mean(&[1.0, 2.0, 3.0]), 2.0);
    }

    #[test]
    fn median_of_even_count() {
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5, "median of an even count");
    }
}
`;

const calcJs = `export function total(items) {
  return items.reduce((sum, item) => sum + item.price * item.qty, 0);
}

export function discount(amount, percent) {
  return amount - amount * percent;
}
`;

const calcTestJs = `import { test } from "node:test";
import assert from "node:assert/strict";
import { total, discount } from "./cart.js";

test("total adds price times quantity", () => {
  assert.equal(total([{ price: 2, qty: 3 }, { price: 1, qty: 1 }]), 7);
});

test("discount takes a percentage off", () => {
  assert.equal(discount(200, 10), 180);
});
`;

const modules = ["accounts", "billing", "reports", "emails", "admin", "search"];
const modulePy = (name: string) => `from users import get_user_name


def ${name}_header(user):
    return "${name}: " + get_user_name(user)
`;
const usersPy = `def get_user_name(user):
    return user["first"] + " " + user["last"]
`;
const refactorTest = `import unittest

from users import user_display_name
${modules.map((m) => `from ${m} import ${m}_header`).join("\n")}

USER = {"first": "Ada", "last": "Lovelace"}


class TestHeaders(unittest.TestCase):
    def test_display_name(self):
        self.assertEqual(user_display_name(USER), "Ada Lovelace")

${modules.map((m) => `    def test_${m}(self):\n        self.assertEqual(${m}_header(USER), "${m}: Ada Lovelace")\n`).join("\n")}

if __name__ == "__main__":
    unittest.main()
`;

const checkSh = `#!/bin/sh
if [ ! -f build/ready ]; then
  echo "checking build/ready"
  echo "error: build/ready is missing; run the build first" >&2
  exit 1
fi
echo "build is ready"
`;

const calcC = `#include <stdio.h>

int sum(const int *xs, int n) {
    int total = 0;
    for (int i = 0; i < n; i++) total += xs[i];
    return total;
}

double average(const int *xs, int n) {
    return (double)sum(xs, n) / count;
}

int main(void) {
    int xs[] = {1, 2, 3};
    printf("%f\\n", average(xs, 3));
    return 0;
}
`;

const cmakeLists = `cmake_minimum_required(VERSION 3.10)
project(calc C)
enable_testing()
add_executable(test_calc test_calc.c)
add_test(NAME sum_adds_numbers COMMAND test_calc sum)
add_test(NAME average_of_three COMMAND test_calc average)
add_test(NAME divide_by_zero_is_refused COMMAND test_calc divide)
`;

const testCalcC = `#include <stdio.h>
#include <string.h>

static int sum(int a, int b) { return a + b; }
static double average(int a, int b, int c) { return (a + b + c) / 3; }
static int divide(int a, int b, int *out) { *out = b ? a / b : 0; return 0; }

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (!strcmp(argv[1], "sum")) {
        if (sum(2, 3) != 5) { printf("test_calc.c:11: sum(2, 3) = %d, expected 5\\n", sum(2, 3)); return 1; }
        return 0;
    }
    if (!strcmp(argv[1], "average")) {
        double a = average(1, 2, 4);
        if (a < 2.3333 || a > 2.3334) { printf("test_calc.c:16: average(1, 2, 4) = %f, expected 2.333333\\n", a); return 1; }
        return 0;
    }
    if (!strcmp(argv[1], "divide")) {
        int q;
        if (divide(1, 0, &q) == 0) { printf("test_calc.c:21: divide(1, 0) returned 0, expected -1 (division by zero)\\n"); return 1; }
        return 0;
    }
    return 2;
}
`;

// The same two faults among 24 tests: an output longer than the part of it
// a question shows whole, with one failure near its start and one near its end.
const manyTests = [
  "sum_adds_numbers", "sum_of_negatives", "sum_with_zero", "difference_of_two",
  "average_of_three", "average_of_one_value", "product_of_two", "product_with_zero",
  "product_of_negatives", "absolute_of_negative", "absolute_of_positive", "maximum_of_two",
  "maximum_of_equal", "clamp_below_range", "clamp_above_range", "clamp_inside_range",
  "divide_evenly", "divide_rounds_down", "divide_negative", "divide_by_one",
  "divide_by_zero_is_refused", "difference_to_zero", "sum_is_commutative", "product_is_commutative",
];

const cmakeListsMany = `cmake_minimum_required(VERSION 3.10)
project(calc C)
enable_testing()
add_executable(test_calc test_calc.c)
foreach(t ${manyTests.join(" ")})
  add_test(NAME \${t} COMMAND test_calc \${t})
endforeach()
`;

const testCalcManyC = `#include <stdio.h>
#include <string.h>

static int sum(int a, int b) { return a + b; }
static int difference(int a, int b) { return a - b; }
static int product(int a, int b) { return a * b; }
static double average(int a, int b, int c) { return (a + b + c) / 3; }
static int divide(int a, int b, int *out) { *out = b ? a / b : 0; return 0; }
static int absolute(int x) { return x < 0 ? -x : x; }
static int maximum(int a, int b) { return a > b ? a : b; }
static int clamp(int x, int lo, int hi) { return x < lo ? lo : x > hi ? hi : x; }

static int expect(const char *what, int got, int want, int line) {
    if (got == want) return 0;
    printf("test_calc.c:%d: %s = %d, expected %d\\n", line, what, got, want);
    return 1;
}

static int quotient(int a, int b) { int q = 0; divide(a, b, &q); return q; }

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    const char *t = argv[1];
    if (!strcmp(t, "sum_adds_numbers")) return expect("sum(2, 3)", sum(2, 3), 5, __LINE__);
    if (!strcmp(t, "sum_of_negatives")) return expect("sum(-2, -3)", sum(-2, -3), -5, __LINE__);
    if (!strcmp(t, "sum_with_zero")) return expect("sum(7, 0)", sum(7, 0), 7, __LINE__);
    if (!strcmp(t, "difference_of_two")) return expect("difference(9, 4)", difference(9, 4), 5, __LINE__);
    if (!strcmp(t, "average_of_three")) {
        double a = average(1, 2, 4);
        if (a < 2.3333 || a > 2.3334) { printf("test_calc.c:%d: average(1, 2, 4) = %f, expected 2.333333\\n", __LINE__, a); return 1; }
        return 0;
    }
    if (!strcmp(t, "average_of_one_value")) return expect("average(3, 3, 3)", (int)average(3, 3, 3), 3, __LINE__);
    if (!strcmp(t, "product_of_two")) return expect("product(6, 7)", product(6, 7), 42, __LINE__);
    if (!strcmp(t, "product_with_zero")) return expect("product(6, 0)", product(6, 0), 0, __LINE__);
    if (!strcmp(t, "product_of_negatives")) return expect("product(-2, -4)", product(-2, -4), 8, __LINE__);
    if (!strcmp(t, "absolute_of_negative")) return expect("absolute(-5)", absolute(-5), 5, __LINE__);
    if (!strcmp(t, "absolute_of_positive")) return expect("absolute(5)", absolute(5), 5, __LINE__);
    if (!strcmp(t, "maximum_of_two")) return expect("maximum(3, 8)", maximum(3, 8), 8, __LINE__);
    if (!strcmp(t, "maximum_of_equal")) return expect("maximum(4, 4)", maximum(4, 4), 4, __LINE__);
    if (!strcmp(t, "clamp_below_range")) return expect("clamp(-1, 0, 10)", clamp(-1, 0, 10), 0, __LINE__);
    if (!strcmp(t, "clamp_above_range")) return expect("clamp(11, 0, 10)", clamp(11, 0, 10), 10, __LINE__);
    if (!strcmp(t, "clamp_inside_range")) return expect("clamp(5, 0, 10)", clamp(5, 0, 10), 5, __LINE__);
    if (!strcmp(t, "divide_evenly")) return expect("divide(8, 2)", quotient(8, 2), 4, __LINE__);
    if (!strcmp(t, "divide_rounds_down")) return expect("divide(7, 2)", quotient(7, 2), 3, __LINE__);
    if (!strcmp(t, "divide_negative")) return expect("divide(-8, 2)", quotient(-8, 2), -4, __LINE__);
    if (!strcmp(t, "divide_by_one")) return expect("divide(9, 1)", quotient(9, 1), 9, __LINE__);
    if (!strcmp(t, "divide_by_zero_is_refused")) {
        int q;
        if (divide(1, 0, &q) == 0) { printf("test_calc.c:%d: divide(1, 0) returned 0, expected -1 (division by zero)\\n", __LINE__); return 1; }
        return 0;
    }
    if (!strcmp(t, "difference_to_zero")) return expect("difference(4, 4)", difference(4, 4), 0, __LINE__);
    if (!strcmp(t, "sum_is_commutative")) return expect("sum(3, 4) - sum(4, 3)", sum(3, 4) - sum(4, 3), 0, __LINE__);
    if (!strcmp(t, "product_is_commutative")) return expect("product(3, 4) - product(4, 3)", product(3, 4) - product(4, 3), 0, __LINE__);
    return 2;
}
`;

const goMod = `module example.com/calc

go 1.19
`;
const calcGo = `package calc

func Sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}

func Average(xs []int) float64 { return float64(Sum(xs) / len(xs)) }

func Max(xs []int) int {
	m := 0
	for _, x := range xs {
		if x > m {
			m = x
		}
	}
	return m
}
`;
const calcTestGo = `package calc

import "testing"

func TestSum(t *testing.T) {
	if got := Sum([]int{1, 2, 3}); got != 6 {
		t.Errorf("Sum = %d, want 6", got)
	}
}

func TestAverage(t *testing.T) {
	if got := Average([]int{1, 2}); got != 1.5 {
		t.Errorf("Average([1 2]) = %v, want 1.5", got)
	}
}

func TestMax(t *testing.T) {
	if got := Max([]int{-3, -1}); got != -1 {
		t.Fatalf("Max([-3 -1]) = %d, want -1", got)
	}
}
`;

const runTestsSh = `#!/bin/bash
# Runs each tests/*.sh; a test fails when it exits non-zero.
failed=0; total=0
for t in tests/*.sh; do
  total=$((total + 1))
  name=$(basename "$t" .sh)
  if out=$(bash "$t" 2>&1); then
    echo "$name ... ok"
  else
    echo "$name ... FAILED"
    echo "$out" | sed 's/^/  /'
    failed=$((failed + 1))
  fi
done
echo "$failed of $total tests failed"
[ "$failed" -eq 0 ]
`;
const loginTest = `set -eu
. ./session.sh
login alice
[ "$SESSION_USER" = alice ] || { echo "expected SESSION_USER=alice, got $SESSION_USER"; exit 1; }
`;
const logoutTest = `set -eu
. ./session.sh
login alice
logout
[ -z "$SESSION_USER" ] || { echo "expected no SESSION_USER after logout, got $SESSION_USER"; exit 1; }
`;
const refreshTest = `set -eu
. ./session.sh
login alice
status=$(refresh)
[ "$status" = 200 ] || { echo "refresh: expected status 200, got $status"; exit 1; }
`;
const sessionSh = `login() { SESSION_USER="$1"; SESSION_TOKEN="t-$1"; }
logout() { unset SESSION_TOKEN; echo "logged out $session_id"; }
refresh() { if [ -n "\${SESSION_TOKEN:-}" ]; then echo 401; else echo 200; fi; }
`;

/** A C project's ctest run with two faults in test_calc.c, fixed, then run again. */
function ctestScenario(name: string, goal: string, cmake: string, source: string): EvalScenario {
  return {
    name,
    goal,
    steps: (p) => [
      write(`${p}/CMakeLists.txt`, cmake),
      write(`${p}/test_calc.c`, source),
      bash("cmake -S . -B build > /dev/null && cmake --build build > /dev/null && cd build && ctest --output-on-failure"),
      edit(`${p}/test_calc.c`, "(a + b + c) / 3;", "(a + b + c) / 3.0;"),
      edit(`${p}/test_calc.c`, "*out = b ? a / b : 0; return 0;", "if (!b) return -1; *out = a / b; return 0;"),
      bash("cmake --build build > /dev/null && cd build && ctest --output-on-failure"),
    ],
  };
}

const testCalcPytest = `from calc import add, average, div


def test_add():
    assert add(2, 3) == 5


def test_add_negative():
    assert add(-2, -3) == -5


def test_average():
    assert average([1, 2]) == 1.5


def test_div():
    assert div(6, 3) == 2
`;

const inventoryPy = `import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def parse_price(text):
    return float(text.strip("$"))


def total_value(items):
    return sum(parse_price(item["price"]) * item["quantity"] for item in items)


def format_total(value):
    return f"{value:.1f}"


def main(path):
    items = load(path)
    print(f"{len(items)} items, total {format_total(total_value(items))}")


if __name__ == "__main__":
    main(sys.argv[1])
`;

const itemsJson = `[
  { "name": "bolt", "price": "$0.25", "qty": 40 },
  { "name": "nut", "price": "$0.10", "qty": 100 },
  { "name": "washer", "price": "0,05", "qty": 200 }
]
`;

const testInventoryPy = `from inventory import format_total, parse_price, total_value


def test_parse_price_dollars():
    assert parse_price("$0.25") == 0.25


def test_parse_price_decimal_comma():
    assert parse_price("0,05") == 0.05


def test_total_value():
    items = [{"price": "$0.25", "qty": 40}, {"price": "$1.50", "qty": 2}]
    assert total_value(items) == 13.0


def test_format_total():
    assert format_total(30) == "30.00"
`;

const reportPy = `import os
import sys
import json


def summarize(rows):
    total = 0
    for row in rows:
        total += row["amount"]
    average = total / len(rows)
    return {"count": len(rows), "total": total}


def render(summary):
    header = f"Report"
    return header + "\\n" + json.dumps(summary, indent=2)


def main():
    rows = json.load(open(sys.argv[1]))
    print(render(summarise(rows)))


if __name__ == "__main__":
    main()
`;

const priceJs = `export function withTax(net, rate) {
  return net + rate;
}

export function toCents(amount) {
  return Math.round(amount * 100);
}
`;

const formatJs = `export function formatEuros(cents) {
  return \`€\${cents / 100}\`;
}
`;

const priceTestJs = `import { test } from "node:test";
import assert from "node:assert/strict";
import { withTax, toCents } from "../src/price.js";

test("withTax adds the rate as a fraction", () => {
  assert.equal(withTax(200, 0.25), 250);
});

test("toCents rounds to whole cents", () => {
  assert.equal(toCents(12.5), 1250);
});
`;

const formatTestJs = `import { test } from "node:test";
import assert from "node:assert/strict";
import { formatEuros } from "../src/format.js";

test("formatEuros keeps two decimals", () => {
  assert.equal(formatEuros(1250), "€12.50");
});

test("formatEuros of cents", () => {
  assert.equal(formatEuros(1234), "€12.34");
});
`;

const configH = `struct config {
    char host[64];
    int port;
};

int parse_config(const char *text, struct config *cfg);
`;

const configC = `#include <stdio.h>
#include <string.h>
#include "config.h"

int parse_config(const char *text, struct config *cfg) {
    cfg->port = 0;
    strcpy(cfg->host, "0.0.0.0");
    const char *line = text;
    while (*line) {
        if (sscanf(line, "port=%d", &cfg->port) == 1) {}
        else sscanf(line, "host=%63s", cfg->host);
        const char *nl = strchr(line, '\\n');
        if (!nl) break;
        line = nl + 1;
    }
    return cfg->port ? -1 : 0;
}
`;

const appMainC = `#include <stdio.h>
#include "config.h"

int main(void) {
    struct config cfg;
    if (parse_config("port=8080\\nhost=localhost\\n", &cfg) != 0) {
        fprintf(stderr, "app: bad config: missing port\\n");
        return 3;
    }
    printf("listening on %s:%d\\n", cfg.host, cfg.port);
    return 0;
}
`;

const appMakefile = "CFLAGS = -Wall -O2\n\napp: main.o\n\t$(CC) $(CFLAGS) -o app main.o\n\nclean:\n\trm -f app *.o\n";

const deploySh = `#!/bin/bash
# Copies the build to the release directory and records the version.
set -e

release_dir=$1
version=$(cat VERSION)
backup=/tmp/backup

cd $release_dir
for f in $(ls ../build/*.tar.gz); do
  cp $f .
done
echo "deployed version $version to $release_dir"
`;

const slugSh = `#!/bin/bash
# slugify TEXT: lower-case, words joined by dashes.
slugify() {
  echo "$1" | tr '[:upper:]' '[:lower:]' | tr ' ' '-'
}

# truncate_slug SLUG MAX: at most MAX characters, no trailing dash.
truncate_slug() {
  local s="\${1:0:$2}"
  echo "$s"
}
`;

const slugBats = `setup() {
  source "$BATS_TEST_DIRNAME/../slug.sh"
}

@test "slugify lower-cases words" {
  run slugify "Hello World"
  [ "$output" = "hello-world" ]
}

@test "slugify squeezes repeated spaces" {
  run slugify "Hello   World"
  [ "$output" = "hello-world" ]
}

@test "slugify drops punctuation" {
  run slugify "Hello, World!"
  [ "$output" = "hello-world" ]
}

@test "truncate_slug keeps short slugs" {
  run truncate_slug "abc" 10
  [ "$output" = "abc" ]
}

@test "truncate_slug drops a trailing dash" {
  run truncate_slug "hello-world" 6
  [ "$output" = "hello" ]
}
`;

const ordersPy = `from dataclasses import dataclass
from typing import Optional


@dataclass
class Order:
    id: int
    customer: str
    total_cents: int
    coupon: Optional[str] = None


def find_order(orders: list[Order], order_id: int) -> Order:
    for order in orders:
        if order.id == order_id:
            return order
    return None


def coupon_code(order: Order) -> str:
    return order.coupon.upper()


def total_euros(order: Order) -> int:
    return order.total_cents / 100
`;

const orderReportPy = `from orders import Order, find_order, total_euros


def describe(orders: list[Order], order_id: int) -> str:
    order = find_order(orders, order_id)
    return order.customer + ": " + total_euros(order)
`;

const orderReportFixedPy = `from orders import Order, find_order, total_euros


def describe(orders: list[Order], order_id: int) -> str:
    order = find_order(orders, order_id)
    if order is None:
        return f"no order {order_id}"
    return f"{order.customer}: {total_euros(order):.2f}"
`;

const eslintConfig = `export default [
  {
    files: ["**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: { console: "readonly", process: "readonly" },
    },
    rules: {
      "no-unused-vars": "error",
      "no-undef": "error",
      "prefer-const": "error",
      eqeqeq: "error",
      "no-var": "error",
    },
  },
];
`;

const todoJs = `import { readFileSync } from "node:fs";

export function loadTodos(path) {
  var text = readFileSync(path, "utf8");
  let todos = JSON.parse(text);
  return todos.filter((t) => t.done == false);
}

export function summary(todos) {
  let open = todos.length;
  const first = todos[0];
  return \`\${open} open, next: \${todos[0].title}\`;
}

export function printSummary(path) {
  console.log(summary(loadTodo(path)));
}
`;

const tsconfigJson = `{
  "compilerOptions": {
    "target": "ES2022",
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "strict": true,
    "outDir": "dist"
  },
  "include": ["src"]
}
`;

const invoiceTs = `export interface LineItem {
  description: string;
  unitPrice: number;
  quantity: number;
}

export interface Invoice {
  id: string;
  customer: string;
  items: LineItem[];
  paidAt?: Date;
}

export function subtotal(invoice: Invoice): number {
  return invoice.items.reduce((sum, item) => sum + item.unitPrice * item.quantity, 0);
}

export function isOverdue(invoice: Invoice, now: Date): boolean {
  return invoice.paidAt === undefined && now.getTime() - invoice.dueDate.getTime() > 0;
}
`;

const renderTs = `import { type Invoice, subtotal } from "./invoice.js";

export function renderTotal(invoice: Invoice): string {
  const total: string = subtotal(invoice);
  return \`\${invoice.customer}: \${total}\`;
}

export function renderPaid(invoice: Invoice): string {
  return invoice.paidAt.toISOString();
}
`;

const durationJs = `function parseDuration(text) {
  const m = /^(\\d+)(ms|s|m|h)$/.exec(text);
  if (!m) throw new Error(\`bad duration: \${text}\`);
  const n = Number(m[1]);
  const unit = { ms: 1, s: 1000, m: 60000, h: 360000 }[m[2]];
  return n * unit;
}

function formatDuration(ms) {
  if (ms < 1000) return \`\${ms}ms\`;
  if (ms < 60000) return \`\${ms / 1000}s\`;
  return \`\${Math.floor(ms / 60000)}m\`;
}

module.exports = { parseDuration, formatDuration };
`;

const retryJs = `function backoff(attempt, base = 100, max = 5000) {
  return Math.min(base * 2 ** attempt, max);
}

function shouldRetry(status) {
  return status >= 500 || status === 429;
}

module.exports = { backoff, shouldRetry };
`;

const durationTestJs = `const { parseDuration, formatDuration } = require("../src/duration");

describe("parseDuration", () => {
  test("parses seconds", () => {
    expect(parseDuration("5s")).toBe(5000);
  });

  test("parses hours", () => {
    expect(parseDuration("2h")).toBe(7200000);
  });

  test("rejects a unit it does not know", () => {
    expect(() => parseDuration("3d")).toThrow("bad duration: 3d");
  });
});

describe("formatDuration", () => {
  test("formats minutes and seconds", () => {
    expect(formatDuration(90000)).toBe("1m30s");
  });
});
`;

const retryTestJs = `const { backoff, shouldRetry } = require("../src/retry");

test("backoff doubles each attempt", () => {
  expect(backoff(0)).toBe(100);
  expect(backoff(3)).toBe(800);
});

test("backoff is capped", () => {
  expect(backoff(10)).toBe(5000);
});

test("retries 503 but not 404", () => {
  expect(shouldRetry(503)).toBe(true);
  expect(shouldRetry(404)).toBe(false);
});
`;

const queueJs = `class PriorityQueue {
  constructor() {
    this.items = [];
  }

  push(value, priority) {
    this.items.push({ value, priority });
    this.items.sort((a, b) => a.priority - b.priority);
  }

  pop() {
    return this.items.shift().value;
  }

  peek() {
    return this.items[0].value;
  }

  get size() {
    return this.items.length;
  }
}

module.exports = { PriorityQueue };
`;

const queueTestJs = `const assert = require("node:assert");
const { PriorityQueue } = require("../lib/queue");

describe("PriorityQueue", function () {
  it("pops the highest priority first", function () {
    const q = new PriorityQueue();
    q.push("low", 1);
    q.push("high", 5);
    q.push("mid", 3);
    assert.strictEqual(q.pop(), "high");
  });

  it("keeps insertion order for equal priorities", function () {
    const q = new PriorityQueue();
    q.push("a", 2);
    q.push("b", 2);
    assert.deepStrictEqual([q.pop(), q.pop()], ["a", "b"]);
  });

  it("counts its items", function () {
    const q = new PriorityQueue();
    q.push("x", 1);
    q.push("y", 1);
    assert.strictEqual(q.size, 2);
  });

  describe("when empty", function () {
    it("pop returns undefined", function () {
      assert.strictEqual(new PriorityQueue().pop(), undefined);
    });

    it("peek returns undefined", function () {
      assert.strictEqual(new PriorityQueue().peek(), undefined);
    });
  });
});
`;

const wordfreqToml = `[package]
name = "wordfreq"
version = "0.1.0"
edition = "2021"
`;

const wordfreqRs = `use std::collections::HashMap;

/// Counts each lower-cased word of \`text\`.
pub fn count_words(text: &str) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for word in text.split_whitespace() {
        let word = word.to_lowercase();
        if counts.contains_key(&word) {
            *counts.get_mut(&word).unwrap() += 1;
        } else {
            counts.insert(word, 1);
        }
    }
    counts
}

/// The \`n\` most frequent words, most frequent first.
pub fn top(counts: &HashMap<String, usize>, n: usize) -> Vec<(String, usize)> {
    let mut all: Vec<(String, usize)> = counts.iter().map(|(w, c)| (w.clone(), *c)).collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out = Vec::new();
    for i in 0..n {
        if i < all.len() {
            out.push(all[i].clone());
        }
    }
    out
}

pub fn is_empty_text(text: &str) -> bool {
    return text.trim().len() == 0;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_case_insensitively() {
        let c = count_words("The cat the hat");
        assert_eq!(c["the"], 2);
    }

    #[test]
    fn top_two() {
        let c = count_words("a b b c c c");
        assert_eq!(top(&c, 2), vec![("c".to_string(), 3), ("b".to_string(), 2)]);
    }
}
`;

const hitsGo = `package hits

import (
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Entry is one line of an access log: a path and its hit count.
type Entry struct {
	Path string \`json:"path"\`
	Hits int    \`json:hits\`
}

// Counter counts hits per path; safe for concurrent use.
type Counter struct {
	mu     sync.Mutex
	counts map[string]int
}

func NewCounter() *Counter { return &Counter{counts: map[string]int{}} }

func (c *Counter) Add(path string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[path] += n
}

func (c Counter) Get(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[path]
}

// ParseLine parses "PATH COUNT".
func ParseLine(line string) (Entry, error) {
	fields := strings.Fields(line)
	n, err := strconv.Atoi(fields[len(fields)-1])
	if err != nil {
		return Entry{}, err
	}
	return Entry{Path: fields[1], Hits: n}, nil
}

// Top returns the n paths with the most hits, most first.
func (c *Counter) Top(n int) []Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	var all []Entry
	for p, h := range c.counts {
		all = append(all, Entry{Path: p, Hits: h})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Hits < all[j].Hits })
	if len(all) > n {
		all = all[:n]
	}
	return all
}
`;

const hitsTestGo = `package hits

import "testing"

func TestParseLine(t *testing.T) {
	e, err := ParseLine("/index.html 42")
	if err != nil {
		t.Fatal(err)
	}
	if e.Path != "/index.html" || e.Hits != 42 {
		t.Errorf("ParseLine = %+v, want {Path:/index.html Hits:42}", e)
	}
}

func TestParseLineBadCount(t *testing.T) {
	if _, err := ParseLine("/a many"); err == nil {
		t.Error("ParseLine accepted a count that is not a number")
	}
}

func TestCounterGet(t *testing.T) {
	c := NewCounter()
	c.Add("/a", 2)
	c.Add("/a", 3)
	if got := c.Get("/a"); got != 5 {
		t.Errorf("Get(/a) = %d, want 5", got)
	}
}

func TestTopOrdersByHits(t *testing.T) {
	c := NewCounter()
	c.Add("/a", 1)
	c.Add("/b", 7)
	c.Add("/c", 4)
	top := c.Top(2)
	if len(top) != 2 || top[0].Path != "/b" || top[1].Path != "/c" {
		t.Errorf("Top(2) = %v, want [{/b 7} {/c 4}]", top)
	}
}
`;

const moneyJs = `export function parseAmount(text) {
  return Number(text.replace("€", ""));
}

export function formatAmount(cents) {
  return \`€\${Math.floor(cents / 100)}.\${cents % 100}\`;
}
`;

const moneyTestJs = `import { parseAmount, formatAmount } from "./money.js";

describe("money", () => {
  it("parses euros", () => {
    expect(parseAmount("€12.50")).toBe(12.5);
  });

  it("formats cents with two digits", () => {
    expect(formatAmount(1205)).toBe("€12.05");
  });
});
`;

const cartLinesJs = `export function addItem(cart, item) {
  const existing = cart.find((line) => line.sku === item.sku);
  if (existing) existing.qty = item.qty;
  else cart.push({ ...item });
  return cart;
}

export function itemCount(cart) {
  return cart.reduce((n, line) => n + line.qty, 0);
}
`;

const cartLinesTestJs = `import { addItem, itemCount } from "./cart.js";

describe("cart", () => {
  it("adds a new line", () => {
    expect(addItem([], { sku: "A1", qty: 1 })).toEqual([{ sku: "A1", qty: 1 }]);
  });

  it("merges quantities of the same sku", () => {
    const cart = addItem([{ sku: "A1", qty: 2 }], { sku: "A1", qty: 3 });
    expect(cart).toEqual([{ sku: "A1", qty: 5 }]);
  });

  it("counts all items", () => {
    expect(itemCount([{ sku: "A1", qty: 2 }, { sku: "B2", qty: 1 }])).toBe(3);
  });
});
`;

const shippingTs = `export type Zone = "domestic" | "eu" | "world";

export interface Parcel {
  weightKg: number;
  zone: Zone;
}

const RATES: Record<Zone, number> = { domestic: 4.5, eu: 9, world: 18 };

export function shippingCost(parcel: Parcel): number {
  const base = RATES[parcel.zone];
  return parcel.weightKg > 2 ? base * 2 : base;
}

export function cheapestZone(parcels: Parcel[]): Zone {
  const sorted = [...parcels].sort((a, b) => shippingCost(a) - shippingCost(b));
  return sorted.length > 0 ? sorted[0].zone : null;
}

export function label(parcel: Parcel): string {
  return \`\${parcel.zone.toUpperCase()} \${parcel.weightKg}kg: \${shippingCost(parcel, "express")}\`;
}
`;

// --- Sessions written by an independent helper from the tools' real output
// (known families: rspec, minitest, phpunit, JUnit 5, flake8 and pylint,
// prove, doctest and unittest; then held-out tools).

const inventoryRb = `class Inventory
  def initialize
    @items = {}
  end

  def add(sku, qty)
    @items[sku] = qty
  end

  def count(sku)
    @items[sku]
  end

  def total_units
    @items.values.sum
  end

  def low_stock(threshold)
    @items.select { |_sku, qty| qty < threshold }.keys
  end
end
`;

const inventorySpecRb = `require_relative "../lib/inventory"

RSpec.configure do |config|
  config.example_status_persistence_file_path = ".rspec_status"
end

RSpec.describe Inventory do
  subject(:inv) { described_class.new }

  describe "#add" do
    it "adds up repeated skus" do
      inv.add("A1", 2)
      inv.add("A1", 3)
      expect(inv.count("A1")).to eq(5)
    end
  end

  describe "#count" do
    it "is zero for an unknown sku" do
      expect(inv.count("ZZ")).to eq(0)
    end
  end

  describe "#total_units" do
    it "sums every sku" do
      inv.add("A1", 2)
      inv.add("B2", 4)
      expect(inv.total_units).to eq(6)
    end
  end

  describe "#low_stock" do
    it "includes skus at the threshold" do
      inv.add("A1", 5)
      inv.add("B2", 9)
      expect(inv.low_stock(5)).to eq(["A1"])
    end
  end
end
`;

const slugRb = `module Slug
  def self.slugify(text)
    text.downcase.gsub(" ", "-")
  end

  def self.truncate(slug, max)
    slug[0, max]
  end
end
`;

const testSlugRb = `require "minitest/autorun"
require "slug"

class TestSlug < Minitest::Test
  def test_lowercases_words
    assert_equal "hello-world", Slug.slugify("Hello World")
  end

  def test_squeezes_repeated_spaces
    assert_equal "hello-world", Slug.slugify("hello   world")
  end

  def test_drops_punctuation
    assert_equal "hello-world", Slug.slugify("Hello, World!")
  end

  def test_truncate_drops_trailing_dash
    assert_equal "hello", Slug.truncate("hello-world", 6)
  end
end
`;

const slugRakefile = `require "rake/testtask"

Rake::TestTask.new(:test) do |t|
  t.libs << "lib" << "test"
  t.test_files = FileList["test/test_*.rb"]
  t.warning = false
end

task default: :test
`;

const temperaturePhp = `<?php

final class Temperature
{
    public static function toFahrenheit(float $celsius): float
    {
        return $celsius * 9 / 5 + 32;
    }

    public static function toCelsius(float $fahrenheit): float
    {
        return $fahrenheit - 32 * 5 / 9;
    }

    public static function describe(float $celsius): string
    {
        if ($celsius < 0) {
            return 'freezing';
        }
        if ($celsius > 30) {
            return 'hot';
        }
        return 'mild';
    }
}
`;

const temperatureTestPhp = `<?php

use PHPUnit\\Framework\\TestCase;

final class TemperatureTest extends TestCase
{
    public function testFreezingPointInFahrenheit(): void
    {
        $this->assertSame(32.0, Temperature::toFahrenheit(0));
    }

    public function testBoilingPointInCelsius(): void
    {
        $this->assertEqualsWithDelta(100.0, Temperature::toCelsius(212), 0.01);
    }

    public function testBodyTemperatureInCelsius(): void
    {
        $this->assertEqualsWithDelta(37.0, Temperature::toCelsius(98.6), 0.01);
    }

    public function testZeroIsFreezing(): void
    {
        $this->assertSame('freezing', Temperature::describe(0));
    }

    public function testThirtyFiveIsHot(): void
    {
        $this->assertSame('hot', Temperature::describe(35));
    }
}
`;

const phpunitXml = `<?xml version="1.0" encoding="UTF-8"?>
<phpunit bootstrap="src/Temperature.php" colors="false">
  <testsuites>
    <testsuite name="unit">
      <directory>tests</directory>
    </testsuite>
  </testsuites>
</phpunit>
`;

const boundedStackJava = `import java.util.ArrayList;
import java.util.List;

public class BoundedStack {
    private final int capacity;
    private final List<Integer> items = new ArrayList<>();

    public BoundedStack(int capacity) {
        this.capacity = capacity;
    }

    public void push(int value) {
        if (items.size() > capacity) {
            throw new IllegalStateException("stack is full");
        }
        items.add(value);
    }

    public int pop() {
        return items.remove(0);
    }

    public int size() {
        return items.size();
    }
}
`;

const boundedStackTestJava = `import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class BoundedStackTest {
    @Test
    void popReturnsLastPushed() {
        BoundedStack s = new BoundedStack(3);
        s.push(1);
        s.push(2);
        assertEquals(2, s.pop());
    }

    @Test
    void pushBeyondCapacityThrows() {
        BoundedStack s = new BoundedStack(2);
        s.push(1);
        s.push(2);
        assertThrows(IllegalStateException.class, () -> s.push(3));
    }

    @Test
    void sizeCountsItems() {
        BoundedStack s = new BoundedStack(2);
        s.push(7);
        assertEquals(1, s.size());
    }
}
`;

const junitTestSh = `#!/bin/sh
# Compiles src/ and test/ and runs the JUnit 5 tests.
set -e
J=/usr/share/java
rm -rf build
mkdir -p build
javac -d build -cp "$J/junit-jupiter-api.jar:$J/apiguardian-api.jar:$J/opentest4j.jar" src/*.java test/*.java
java -jar "$J/junit-platform-console-standalone.jar" --disable-banner --class-path build --scan-class-path
`;

const reportFlakePy = `import os
import sys
from collections import defaultdict


def totals_by_region(rows):
    totals = defaultdict(int)
    for row in rows:
        totals[row["region"]] += row["amount"]
    return dict(totals)


def render(totals):
    lines = []
    for region, amount in sorted(totals.items()):
        lines.append(f"{region:<10} {amount:>8}")
    return "\\n".join(lines)


def main(path):
    rows = load_rows(path)
    print(render(totals_by_region(rows)))
`;

const reportFlakeFixedPy = `"""Sales totals per region, read from a CSV file."""

import csv
from collections import defaultdict


def load_rows(path):
    """Read the rows of the CSV file at path, amounts as integers."""
    with open(path, newline="", encoding="utf-8") as f:
        return [
            {"region": r["region"], "amount": int(r["amount"])}
            for r in csv.DictReader(f)
        ]


def totals_by_region(rows):
    """Sum the amounts of the rows per region."""
    totals = defaultdict(int)
    for row in rows:
        totals[row["region"]] += row["amount"]
    return dict(totals)


def render(totals):
    """One aligned line per region, sorted by region."""
    lines = []
    for region, amount in sorted(totals.items()):
        lines.append(f"{region:<10} {amount:>8}")
    return "\\n".join(lines)


def main(path):
    """Print the totals of the CSV file at path."""
    rows = load_rows(path)
    print(render(totals_by_region(rows)))
`;

const textstatsPy = `"""Small text statistics."""


def word_count(text):
    """Count the words of text.

    >>> word_count("the cat sat")
    3
    >>> word_count("  spaced   out  ")
    2
    """
    return len(text.split(" "))


def average_word_length(text):
    words = text.split()
    return sum(len(w) for w in words) // len(words)


def longest_word(text):
    words = text.split()
    return min(words, key=len)
`;

const testTextstatsPy = `import unittest

from textstats import average_word_length, longest_word, word_count


class TestTextStats(unittest.TestCase):
    def test_word_count(self):
        self.assertEqual(word_count("a b c"), 3)

    def test_average_word_length(self):
        self.assertEqual(average_word_length("ab abc"), 2.5)

    def test_longest_word(self):
        self.assertEqual(longest_word("a abc ab"), "abc")


if __name__ == "__main__":
    unittest.main()
`;

const textstatsMakefile = `test:
\tpython3 -m doctest textstats.py
\tpython3 -m unittest -v
`;

const romanPm = `package Roman;
use strict;
use warnings;
use Exporter 'import';
our @EXPORT_OK = qw(to_roman);

my @MAP = ([1000, 'M'], [500, 'D'], [100, 'C'], [50, 'L'], [10, 'X'], [5, 'V'], [1, 'I']);

sub to_roman {
    my ($n) = @_;
    my $out = '';
    for my $pair (@MAP) {
        my ($value, $letters) = @$pair;
        while ($n >= $value) {
            $out .= $letters;
            $n -= $value;
        }
    }
    return $out;
}

1;
`;

const romanT = `use strict;
use warnings;
use Test::More tests => 5;
use Roman qw(to_roman);

is(to_roman(1), 'I', '1 is I');
is(to_roman(4), 'IV', '4 is IV');
is(to_roman(9), 'IX', '9 is IX');
is(to_roman(30), 'XXX', '30 is XXX');
is(to_roman(1994), 'MCMXCIV', '1994 is MCMXCIV');
`;

const rangeT = `use strict;
use warnings;
use Test::More tests => 2;
use Roman qw(to_roman);

ok(!defined eval { to_roman(0) }, 'zero is refused');
like($@, qr/out of range/, 'the error says out of range');
`;

// Held-out tools.

const durationPm = `package Duration;
use strict;
use warnings;
use Exporter 'import';
our @EXPORT_OK = qw(parse_duration format_duration);

my %UNIT = (s => 1, m => 60, h => 360);

sub parse_duration {
    my ($text) = @_;
    my $total = 0;
    while ($text =~ /(\\d+)([hms])/g) {
        $total += $1 * $UNIT{$2};
    }
    return $total;
}

sub format_duration {
    my ($secs) = @_;
    my $m = int($secs / 60);
    my $s = $secs % 60;
    return sprintf('%dm%ds', $m, $s);
}

1;
`;

const durationT = `use strict;
use warnings;
use Test::More;
use Duration qw(parse_duration format_duration);

is(parse_duration('45s'), 45, 'seconds');
is(parse_duration('2m'), 120, 'minutes');
is(parse_duration('1h'), 3600, 'hours');
is(parse_duration('1h30m'), 5400, 'hours and minutes');
is(format_duration(90), '1m30s', 'format minutes and seconds');
is(format_duration(60), '1m', 'format whole minutes');

done_testing();
`;

const wordwrapLua = `local M = {}

function M.wrap(text, width)
  local lines, line = {}, ""
  for word in text:gmatch("%S+") do
    if line == "" then
      line = word
    elseif #line + #word > width then
      table.insert(lines, line)
      line = word
    else
      line = line .. " " .. word
    end
  end
  table.insert(lines, line)
  return lines
end

function M.count_lines(text, width)
  return #M.wrap(text, width) - 1
end

return M
`;

const wordwrapSpecLua = `local wordwrap = require("wordwrap")

describe("wordwrap", function()
  it("keeps short text on one line", function()
    assert.are.same({ "hello world" }, wordwrap.wrap("hello world", 20))
  end)

  it("breaks before a word that would pass the width", function()
    assert.are.same({ "aaa", "bbb", "ccc" }, wordwrap.wrap("aaa bbb ccc", 6))
  end)

  it("counts the wrapped lines", function()
    assert.are.equal(3, wordwrap.count_lines("aaa bbb ccc", 6))
  end)
end)
`;

const invoiceJava = `package app;

import java.util.List;

public class Invoice {
    private final List<Long> lineCents;

    public Invoice(List<Long> lineCents) {
        this.lineCents = lineCents;
    }

    public long totalCents() {
        long total = 0;
        for (long c : lineCents) total += c;
        return total
    }

    public String formatted() {
        return String.format("%d.%02d", totalCents() / 100, totalCents() % 100);
    }
}
`;

const invoiceMainJava = `package app;

import java.util.List;

public class Main {
    public static void main(String[] args) {
        Invoice inv = new Invoice(List.of(1250L, 399L));
        System.out.println("total: " + inv.formated());
        String cents = inv.totalCents();
        System.out.println("cents: " + cents);
    }
}
`;

const ringC = `#include <stdlib.h>
#include <string.h>

#define SLOTS 8

struct ring {
    int slots[SLOTS];
    int head;
};

int ring_last(const struct ring *r) {
    return r->slots[SLOTS];
}

char *ring_name(const char *prefix) {
    char *name = malloc(32);
    if (strlen(prefix) > 16) {
        return NULL;
    }
    strcpy(name, prefix);
    return name;
}

int ring_sum(const struct ring *r) {
    int total;
    for (int i = 0; i < SLOTS; i++) {
        total += r->slots[i];
    }
    return total;
}
`;

const catalogXsd = `<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:element name="catalog">
    <xs:complexType>
      <xs:sequence>
        <xs:element name="book" maxOccurs="unbounded">
          <xs:complexType>
            <xs:sequence>
              <xs:element name="title" type="xs:string"/>
              <xs:element name="price" type="xs:decimal"/>
            </xs:sequence>
            <xs:attribute name="id" type="xs:ID" use="required"/>
          </xs:complexType>
        </xs:element>
      </xs:sequence>
    </xs:complexType>
  </xs:element>
</xs:schema>
`;

const catalogXml = `<?xml version="1.0" encoding="UTF-8"?>
<catalog>
  <book id="b1">
    <title>Dune</title>
    <price>9.99</price>
  </book>
  <book id="b2">
    <title>Emma</titel>
    <price>7,50</price>
  </book>
  <book>
    <title>Ulysses</title>
    <price>12.00</price>
  </book>
</catalog>
`;

const walletMixExs = `defmodule Wallet.MixProject do
  use Mix.Project

  def project do
    [app: :wallet, version: "0.1.0", elixir: "~> 1.14"]
  end
end
`;

const walletEx = `defmodule Wallet do
  def deposit(balance, amount) when amount > 0, do: {:ok, balance + amount}
  def deposit(_balance, _amount), do: {:error, :invalid_amount}

  def withdraw(balance, amount) when amount <= balance, do: {:ok, balance - amount}
  def withdraw(_balance, _amount), do: {:error, :insufficient_funds}

  def apply_fee(balance, percent), do: balance - div(balance * percent, 10)
end
`;

const walletTestExs = `defmodule WalletTest do
  use ExUnit.Case

  test "deposit adds to the balance" do
    assert Wallet.deposit(100, 50) == {:ok, 150}
  end

  test "withdraw refuses more than the balance" do
    assert Wallet.withdraw(100, 150) == {:error, :insufficient_funds}
  end

  test "withdraw refuses a negative amount" do
    assert Wallet.withdraw(100, -5) == {:error, :invalid_amount}
  end

  test "apply_fee takes a percentage" do
    assert Wallet.apply_fee(200, 5) == 190
  end
end
`;

const tasksPy = `import pickle
import subprocess

DB_PASSWORD = "hunter2"


def run(cmd):
    return subprocess.run(cmd, shell=True, check=True)


def load(blob):
    return pickle.loads(blob)


def compute(expr):
    return eval(expr)
`;

const tasksHalfFixedPy = `import ast
import pickle
import subprocess

DB_PASSWORD = "hunter2"


def run(cmd):
    return subprocess.run(cmd, shell=True, check=True)


def load(blob):
    return pickle.loads(blob)


def compute(expr):
    return ast.literal_eval(expr)
`;

const tasksFixedPy = `import ast
import json
import shlex
import subprocess


def run(cmd):
    return subprocess.run(shlex.split(cmd), check=True)


def load(blob):
    return json.loads(blob)


def compute(expr):
    return ast.literal_eval(expr)
`;

const spellReadme = `# tidyfiles

A small tool to seperate photos from documents. It will recieve a folder
and move each file into a sub-folder by its type.

If an error occured, the file is left where it was.
`;

const spellSetup = `# Setup

Install teh tool with pip, then run it once on a test folder to see wich
files it would move. The dry run is the default, so ther is nothing to undo.
`;

// --- Held-out tools (second set): erlang eunit, tcltest, test-unit,
// testthat, alcotest, stylelint, isort, tidy.

const tempErl = `-module(temp).
-export([c_to_f/1, f_to_c/1]).
-include_lib("eunit/include/eunit.hrl").

c_to_f(C) -> C * 9 / 5 + 23.

f_to_c(F) -> (F - 32) * 5 / 9.

c_to_f_test() ->
    ?assertEqual(212.0, c_to_f(100)).

f_to_c_test() ->
    ?assertEqual(100.0, f_to_c(212)).

round_trip_test() ->
    ?assertEqual(37.0, f_to_c(c_to_f(37))).
`;

const labelErl = `-module(label).
-export([label/1]).
-include_lib("eunit/include/eunit.hrl").

label(C) when C < 0 -> freezing;
label(C) when C < 20 -> mild;
label(_) -> warm.

label_test_() ->
    [?_assertEqual(freezing, label(-5)),
     ?_assertEqual(freezing, label(0)),
     ?_assertEqual(mild, label(19)),
     ?_assertEqual(warm, label(20))].
`;

const eunitMakefile = `.PHONY: test
SPEC ?= [temp, label]

test:
\t@mkdir -p ebin
\terlc -o ebin src/*.erl
\terl -noshell -pa ebin -eval 'halt(case eunit:test($(SPEC)) of ok -> 0; _ -> 1 end)'
`;

const slugTcl = `proc slugify {text} {
    set s [string tolower [string trim $text]]
    regsub -all {[^a-z0-9]+} $s - s
    return $s
}

proc truncate {text n} {
    if {[string length $text] <= $n} {
        return $text
    }
    return "[string range $text 0 $n]..."
}
`;

const slugTest = `package require tcltest
namespace import ::tcltest::*
source [file join [file dirname [info script]] .. lib slug.tcl]

test slug-1.1 {lowercases words} {
    slugify "Hello World"
} hello-world

test slug-1.2 {drops leading and trailing dashes} {
    slugify "  Tcl & Tk!  "
} tcl-tk

test trunc-1.1 {short text is kept} {
    truncate "abc" 5
} abc

test trunc-1.2 {long text is cut to n characters} {
    truncate "abcdefgh" 4
} abcd...

cleanupTests
`;

const tclAllTcl = `package require tcltest
namespace import ::tcltest::*
configure -testdir [file dirname [file normalize [info script]]] {*}$argv
exit [runAllTests]
`;

const cartRb = `class Cart
  Item = Struct.new(:name, :price_cents, :qty)

  def initialize
    @items = []
  end

  def add(name, price_cents, qty = 1)
    raise ArgumentError, "qty must be positive" if qty.negative?
    @items << Item.new(name, price_cents, qty)
    self
  end

  def count
    @items.size
  end

  def total_cents
    @items.sum { |i| i.price_cents }
  end
end
`;

const testCartRb = `require "test/unit"
require "cart"

class TestCart < Test::Unit::TestCase
  def test_empty_total
    assert_equal 0, Cart.new.total_cents
  end

  def test_count
    cart = Cart.new.add("pen", 150).add("ink", 400)
    assert_equal 2, cart.count
  end

  def test_total_uses_quantity
    cart = Cart.new.add("pen", 150, 3).add("ink", 400)
    assert_equal 850, cart.total_cents
  end

  def test_rejects_zero_qty
    assert_raise(ArgumentError) { Cart.new.add("pen", 150, 0) }
  end
end
`;

const statsR = `trimmed_mean <- function(x, trim = 0.1) {
  x <- sort(x)
  k <- floor(length(x) * trim)
  mean(x[k:(length(x) - k)])
}

mode_of <- function(x) {
  counts <- table(x)
  as.numeric(names(counts)[which.min(counts)])
}
`;

const testMeanR = `source("../../R/stats.R")

test_that("trimmed_mean drops the extremes", {
  expect_equal(trimmed_mean(c(1, 2, 3, 4, 100), trim = 0.2), 3)
})

test_that("trimmed_mean without trim is the mean", {
  expect_equal(trimmed_mean(c(2, 4, 6), trim = 0), 4)
})
`;

const testModeR = `source("../../R/stats.R")

test_that("mode_of finds the most frequent value", {
  expect_equal(mode_of(c(1, 2, 2, 3, 2)), 2)
})
`;

const wordcDune = `(library
 (name wordc)
 (modules wordc))

(test
 (name test_wordc)
 (modules test_wordc)
 (libraries wordc alcotest))
`;

const wordcMl = `let words s =
  String.split_on_char ' ' s |> List.filter (fun w -> w <> "")

let count s = List.length (words s)

let longest s =
  List.fold_left
    (fun best w -> if String.length w > String.length best then w else best)
    "" (words s)

let capitalize s =
  words s |> List.map String.capitalize_ascii |> String.concat ""
`;

const testWordcMl = [
  "let test_count () =",
  '  Alcotest.(check int) "three words" 3 (Wordc.count "one  two three")',
  "",
  "let test_count_tabs () =",
  '  Alcotest.(check int) "tabs split words" 2 (Wordc.count "one\\ttwo")',
  "",
  "let test_longest () =",
  '  Alcotest.(check string) "first longest wins" "three" (Wordc.longest "one three seven")',
  "",
  "let test_capitalize () =",
  '  Alcotest.(check string) "title case" "Hello World" (Wordc.capitalize "hello world")',
  "",
  "let () =",
  '  Alcotest.run "wordc"',
  "    [",
  '      ("count", [ Alcotest.test_case "spaces" `Quick test_count; Alcotest.test_case "tabs" `Quick test_count_tabs ]);',
  '      ("longest", [ Alcotest.test_case "ties" `Quick test_longest ]);',
  '      ("capitalize", [ Alcotest.test_case "title" `Quick test_capitalize ]);',
  "    ]",
  "",
].join("\n");

const stylePackageJson = `{
  "name": "site",
  "version": "1.0.0",
  "private": true,
  "scripts": { "lint:css": "stylelint \\"css/**/*.css\\"" },
  "stylelint": {
    "rules": {
      "color-no-invalid-hex": true,
      "declaration-block-no-duplicate-properties": true,
      "unit-no-unknown": true,
      "property-no-unknown": true,
      "block-no-empty": true
    }
  }
}
`;

const baseCss = `body {
  margin: 0;
  font-family: system-ui, sans-serif;
  color: #333;
}

a {
  color: #06c;
  color: #0055aa;
}
`;

const layoutCss = `.grid {
  display: grid;
  grid-gap: 12pix;
  grid-template-columns: repeat(3, 1fr);
}

.sidebar {
  widht: 240px;
}

.footer {
}
`;

const layoutFixedCss = `.grid {
  display: grid;
  grid-gap: 12px;
  grid-template-columns: repeat(3, 1fr);
}

.sidebar {
  width: 240px;
}
`;

const reportIsortPy = `import sys
import os
from pathlib import Path
import json


def load(path):
    return json.loads(Path(path).read_text())


def main():
    data = load(sys.argv[1])
    print(os.path.basename(sys.argv[1]), len(data))
`;

const cliIsortPy = `from app.report import main
import argparse


def run():
    parser = argparse.ArgumentParser()
    parser.parse_args()
    main()
`;

const indexHtml = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Home</title>
</head>
<body>
<h1>Welcome</h1>
<p>Read <a href="about.html">about us</a>.
<img src="logo.png">
</body>
</html>
`;

const aboutHtml = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>About</title>
</head>
<body>
<h1>About</h1>
<p>We make <b>small <i>tools</b></i>.</p>
<ul>
<li>Fast</li>
<li>Small
</ul>
<tabel><tr><td>2026</td></tr></tabel>
</body>
</html>
`;

const aboutFixedHtml = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>About</title>
</head>
<body>
<h1>About</h1>
<p>We make <b>small <i>tools</i></b>.</p>
<ul>
<li>Fast</li>
<li>Small</li>
</ul>
<table><tr><td>2026</td></tr></table>
</body>
</html>
`;

const tidyCheckSh = `#!/bin/sh
# Checks every page with tidy; fails if any page has an error or warning.
status=0
for f in site/*.html; do
  echo "checking $f"
  tidy -qe "$f" || status=1
done
exit $status
`;

// --- Held-out tools, third set.

const geoPy = `import math
def distance(a,b):
    dx = b[0] - a[0]
    dy = b[1] - a[1]
    return math.sqrt(dx*dx + dy*dy) 


def bearing(a, b):
    return math.degrees(math.atan2(b[1] - a[1], b[0] - a[0]))
`;

const geoFixedPy = `import math


def distance(a, b):
    dx = b[0] - a[0]
    dy = b[1] - a[1]
    return math.sqrt(dx * dx + dy * dy)


def bearing(a, b):
    return math.degrees(math.atan2(b[1] - a[1], b[0] - a[0]))
`;

const unitsPy = `def to_km(distance, unit=None):
    if unit == None:
        unit = "mi"
    return distance * 1.609344 if unit == "mi" else distance
`;

const styleMakefile = `.PHONY: style
style:
\t@echo "== pycodestyle =="
\t@pycodestyle --max-line-length=100 pkg/
\t@echo "style OK"
`;

const moneyPhp = `<?php

function format_cents(int $cents): string
{
    $sign = $cents < 0 ? '-' : '';
    $cents = abs($cents);
    return $sign . intdiv($cents, 100) . '.' . str_pad((string) ($cents % 100), 2, '0', STR_PAD_LEFT)
}

function parse_money(string $s): int
{
    [$whole, $frac] = array_pad(explode('.', trim($s), 2), 2, '0');
    return (int) $whole * 100 + (int) $frac;
}
`;

const slugPhp = `<?php

function slugify(string $s): string
{
    $s = strtolower(trim($s));
    $s = preg_replace('/[^a-z0-9]+/', '-', $s);
    return trim($s, '-');
}
`;

const runPhp = `<?php
require __DIR__ . '/../src/Money.php';
require __DIR__ . '/../src/Slug.php';

$cases = [
    'format_cents positive' => fn() => format_cents(1234) === '12.34',
    'format_cents negative' => fn() => format_cents(-5) === '-0.05',
    'parse_money whole' => fn() => parse_money('3') === 300,
    'parse_money one decimal' => fn() => parse_money('1.5') === 150,
    'parse_money two decimals' => fn() => parse_money('2.75') === 275,
    'slugify' => fn() => slugify('  Hello, World! ') === 'hello-world',
];

$filter = $argv[1] ?? '';
$failed = 0;
foreach ($cases as $name => $check) {
    if ($filter !== '' && strpos($name, $filter) === false) {
        continue;
    }
    if ($check()) {
        echo "PASS $name\\n";
    } else {
        echo "FAIL $name\\n";
        $failed++;
    }
}
echo $failed === 0 ? "all passed\\n" : "$failed failed\\n";
exit($failed === 0 ? 0 : 1);
`;

const shopSchemaSql = `CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE orders (
  id INTEGER PRIMARY KEY,
  customer_id INTEGER REFERENCES customers(id),
  cents INTEGER NOT NULL,
  status TEXT NOT NULL
);
INSERT INTO customers VALUES (1, 'ann'), (2, 'bob'), (3, 'cy');
INSERT INTO orders VALUES (1, 1, 1000, 'paid'), (2, 1, 2000, 'paid'), (3, 2, 500, 'refunded'), (4, 2, 700, 'paid');
`;

const shopViewsSql = `CREATE VIEW customer_totals AS
SELECT c.name, SUM(o.cents) AS total
FROM customers c JOIN orders o ON o.customer_id = c.id
GROUP BY c.name;
`;

const shopCheckSql = `.bail on
.read schema.sql
.read views.sql
CREATE TEMP TABLE assert (name TEXT, ok INTEGER CHECK (ok = 1));
INSERT INTO assert VALUES ('ann total', (SELECT total FROM customer_totals WHERE name = 'ann') IS 3000);
INSERT INTO assert VALUES ('refunds excluded', (SELECT total FROM customer_totals WHERE name = 'bob') IS 700);
INSERT INTO assert VALUES ('no orders is zero', (SELECT total FROM customer_totals WHERE name = 'cy') IS 0);
SELECT count(*) || ' checks passed' FROM assert;
`;

const regionAwk = `# Totals the amount column of a CSV per region, sorted by region.
{ total[$1] += $2; n[$1]++ }
END {
    for (r in total) printf "%s %d %d\\n", r, n[r], total[r] | "sort"
}
`;

const salesCsv = `region,amount
north,10
south,5
north,2.5
east,7
`;

const regionExpected = `east 1 7.00
north 2 12.50
south 1 5.00
`;

const durationMjs = `const UNITS = { h: 3600, m: 60, s: 1 };

export function parseDuration(text) {
  const re = /(\\d+)([hms])/g;
  let total = 0;
  let match;
  while ((match = re.exec(text)) !== null) {
    total += Number(match[1]) * UNITS[match[2]];
  }
  return total;
}

export function formatDuration(seconds) {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor(seconds / 60);
  const s = seconds % 60;
  return [h && \`\${h}h\`, m && \`\${m}m\`, s && \`\${s}s\`].filter(Boolean).join("") || "0s";
}
`;

const checkDurationMjs = `import assert from "node:assert/strict";
import { formatDuration, parseDuration } from "../src/duration.mjs";

const cases = {
  "parseDuration 1h30m": () => assert.equal(parseDuration("1h30m"), 5400),
  "parseDuration bare seconds": () => assert.equal(parseDuration("90"), 90),
  "formatDuration 45s": () => assert.equal(formatDuration(45), "45s"),
  "formatDuration 1h1m": () => assert.equal(formatDuration(3660), "1h1m"),
  "formatDuration zero": () => assert.equal(formatDuration(0), "0s"),
};

const only = process.argv[2];
let failed = 0;
for (const [name, run] of Object.entries(cases)) {
  if (only && !name.startsWith(only)) continue;
  try {
    run();
    console.log(\`ok - \${name}\`);
  } catch (err) {
    failed++;
    console.log(\`not ok - \${name}\`);
    console.log(\`  \${err.message.split("\\n").join("\\n  ")}\`);
  }
}
console.log(\`\${failed} failed\`);
process.exit(failed ? 1 : 0);
`;

const backupSh = `#!/bin/sh
# Copies each config file into the backup folder with a date suffix.
set -eu
dest=\${BACKUP_DIR:-/var/backups/app}
stamp=$(date +%Y%m%d)
mkdir -p "$dest"
for f in /etc/app/*.conf; do
  [ -e "$f" ] || continue
  cp "$f" "$dest/$(basename "$f").$stamp"
echo "backed up to $dest"
`;

const rotateSh = `#!/bin/sh
# Keeps the newest $KEEP backups and deletes the rest.
set -eu
dir=\${1:-/var/backups/app}
keep=\${KEEP:-7}
case "$keep" in
  ''|*[!0-9]*) echo "KEEP must be a number" >&2; exit 2 ;;
esac
ls -1t "$dir" | tail -n +$((keep + 1)) | while read -r old; do
  if [ -f "$dir/$old" ]
    rm -- "$dir/$old"
  fi
done
echo "kept $keep"
`;

// --- Held-out tools, fourth set: libcheck, cmocka, ava, cucumber-js, ward,
// markdownlint, yamllint, shunit2.

const moneyH = `#ifndef MONEY_H
#define MONEY_H
long round_cents(double amount);
int parse_cents(const char *text, long *out);
#endif
`;

const moneyC = `#include <stdlib.h>
#include <string.h>
#include "money.h"

long round_cents(double amount) {
    return (long)(amount * 100);
}

int parse_cents(const char *text, long *out) {
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end != '\\0')
        return -1;
    *out = round_cents(v);
    return 0;
}
`;

const moneyFixedC = `#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "money.h"

long round_cents(double amount) {
    return lround(amount * 100);
}

int parse_cents(const char *text, long *out) {
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end != '\\0')
        return -1;
    *out = round_cents(v);
    return 0;
}
`;

const checkRoundC = `#include <check.h>
#include <stdlib.h>
#include "../src/money.h"

START_TEST(test_round_nearest_cent)
{
    ck_assert_int_eq(round_cents(0.29), 29);
}
END_TEST

START_TEST(test_round_whole)
{
    ck_assert_int_eq(round_cents(3.0), 300);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("Money");
    TCase *tc = tcase_create("Rounding");
    tcase_add_test(tc, test_round_nearest_cent);
    tcase_add_test(tc, test_round_whole);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
`;

const checkParseC = `#include <check.h>
#include <stdlib.h>
#include "../src/money.h"

START_TEST(test_parse_plain)
{
    long cents;
    ck_assert_int_eq(parse_cents("12.50", &cents), 0);
    ck_assert_int_eq(cents, 1250);
}
END_TEST

START_TEST(test_parse_rejects_words)
{
    long cents;
    ck_assert_int_eq(parse_cents("twelve", &cent), -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("Money");
    TCase *tc = tcase_create("Parsing");
    tcase_add_test(tc, test_parse_plain);
    tcase_add_test(tc, test_parse_rejects_words);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
`;

const checkMakefile = `CFLAGS = -Wall -g
LIBS = $(shell pkg-config --libs check)

.PHONY: check check-round check-parse
check: check-round check-parse

check-round: tests/check_round
\t./tests/check_round

check-parse: tests/check_parse
\t./tests/check_parse

tests/check_%: tests/check_%.c src/money.c src/money.h
\t$(CC) $(CFLAGS) -o $@ $< src/money.c $(LIBS)
`;

const queueH = `#ifndef QUEUE_H
#define QUEUE_H
struct node { int value; struct node *next; };
struct queue { struct node *head, *tail; int size; };
void queue_push(struct queue *q, int value);
int queue_pop(struct queue *q, int *out);
#endif
`;

const queueC = `#include <stdlib.h>
#include "queue.h"

void queue_push(struct queue *q, int value) {
    struct node *n = malloc(sizeof *n);
    n->value = value;
    n->next = NULL;
    q->tail->next = n;
    q->tail = n;
    q->size++;
}

int queue_pop(struct queue *q, int *out) {
    struct node *n = q->head;
    if (n == NULL)
        return -1;
    *out = n->value;
    q->head = n->next;
    free(n);
    return 0;
}
`;

const queueMainC = `#include <stdio.h>
#include "queue.h"

int main(void) {
    struct queue q = {0};
    for (int i = 1; i <= 3; i++)
        queue_push(&q, i * 10);
    int v;
    while (queue_pop(&q, &v) == 0)
        printf("popped %d\\n", v);
    printf("size after draining: %d\\n", q.size);
    return 0;
}
`;

const testQueueC = `#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>
#include "../src/queue.h"

static void pop_from_empty_fails(void **state) {
    (void)state;
    struct queue q = {0};
    int v;
    assert_int_equal(queue_pop(&q, &v), -1);
}

static void push_then_pop_keeps_order(void **state) {
    (void)state;
    struct queue q = {0};
    int v;
    queue_push(&q, 1);
    queue_push(&q, 2);
    assert_int_equal(queue_pop(&q, &v), 0);
    assert_int_equal(v, 1);
}

static void size_counts_pushes_and_pops(void **state) {
    (void)state;
    struct queue q = {0};
    int v;
    queue_push(&q, 5);
    queue_push(&q, 6);
    queue_pop(&q, &v);
    assert_int_equal(q.size, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pop_from_empty_fails),
        cmocka_unit_test(push_then_pop_keeps_order),
        cmocka_unit_test(size_counts_pushes_and_pops),
    };
    cmocka_set_test_filter(getenv("TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
`;

const cmockaMakefile = `CFLAGS = -Wall -g

.PHONY: run test
run: demo
\t./demo

test: tests/test_queue
\t./tests/test_queue

demo: src/main.c src/queue.c src/queue.h
\t$(CC) $(CFLAGS) -o $@ src/main.c src/queue.c

tests/test_queue: tests/test_queue.c src/queue.c src/queue.h
\t$(CC) $(CFLAGS) -o $@ tests/test_queue.c src/queue.c -lcmocka
`;

const bytesJs = `const UNITS = ["B", "KB", "MB", "GB"];

export function formatBytes(n) {
  let i = 0;
  while (n > 1024 && i < UNITS.length - 1) {
    n /= 1024;
    i++;
  }
  return \`\${Math.round(n * 10) / 10} \${UNITS[i]}\`;
}

export function parseBytes(text) {
  const m = /^(\\d+(?:\\.\\d+)?)\\s*(B|KB|MB|GB)$/.exec(text.trim());
  if (!m) throw new Error(\`not a size: \${text}\`);
  return Number(m[1]) * 1000 ** UNITS.indexOf(m[2]);
}
`;

const bytesTestJs = `import test from "ava";
import { formatBytes, parseBytes } from "../src/bytes.js";

test("formats bytes below a kilobyte", (t) => {
  t.is(formatBytes(512), "512 B");
});

test("formats exactly one kilobyte", (t) => {
  t.is(formatBytes(1024), "1 KB");
});

test("parses megabytes", (t) => {
  t.is(parseBytes("2 MB"), 2 * 1024 * 1024);
});

test("rejects garbage", (t) => {
  t.throws(() => parseBytes("lots"), { message: "not a size: lots" });
});
`;

const basketJs = `class Basket {
  constructor() {
    this.items = [];
  }
  add(name, price, qty = 1) {
    this.items.push({ name, price, qty });
  }
  total() {
    return this.items.reduce((sum, i) => sum + i.price, 0);
  }
  applyCoupon(code) {
    if (code === "HALF") this.discount = 0.5;
    else throw new Error(\`unknown coupon \${code}\`);
  }
  due() {
    return this.total() * this.discount;
  }
}
module.exports = { Basket };
`;

const basketFeature = `Feature: Basket totals

  Scenario: Total of one item
    Given an empty basket
    When I add 1 "pen" at 2.50
    Then the total is 2.50

  Scenario: Total counts quantities
    Given an empty basket
    When I add 3 "pen" at 2.00
    Then the total is 6.00

  @coupon
  Scenario: Half-price coupon
    Given an empty basket
    When I add 1 "lamp" at 40.00
    And I apply the coupon "HALF"
    Then the amount due is 20.00

  Scenario: Amount due without a coupon
    Given an empty basket
    When I add 2 "cup" at 3.00
    Then the amount due is 6.00
`;

const basketStepsJs = `const assert = require("node:assert/strict");
const { Given, When, Then } = require("@cucumber/cucumber");
const { Basket } = require("../../src/basket.js");

Given("an empty basket", function () {
  this.basket = new Basket();
});

When("I add {int} {string} at {float}", function (qty, name, price) {
  this.basket.add(name, price, qty);
});

When("I apply the coupon {string}", function (code) {
  this.basket.applyCoupon(code);
});

Then("the total is {float}", function (expected) {
  assert.equal(this.basket.total(), expected);
});

Then("the amount due is {float}", function (expected) {
  assert.equal(this.basket.due(), expected);
});
`;

const slugsPy = `import re


def slugify(title):
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower())
    return slug


def shorten(slug, limit):
    return slug[:limit]
`;

const testSlugsWardPy = `from ward import test

from slugs import shorten, slugify


@test("slugify lowercases and joins words")
def _():
    assert slugify("Hello World") == "hello-world"


@test("slugify drops trailing punctuation")
def _():
    assert slugify("Ready? Go!") == "ready-go"


@test("shorten never ends on a dash")
def _():
    assert shorten("a-very-long-title", 7) == "a-very"


@test("shorten keeps short slugs")
def _():
    assert shorten("tiny", 10) == "tiny"
`;

const wardTestSh = `#!/bin/sh
# ward lives in the tools venv, not on the default PATH.
export PATH=/tmp/tools/venv/bin:$PATH
exec ward "$@"
`;

const handbookReadme = "# Handbook\n\nHow we work.   \n## Setup\n* install the tools\n+ run the checks\n\nSee http://example.com/guide for more.\n";
const releaseMd = "# Releases\n\n### Tagging\n\nTag with `git tag`.\n\n\n## Checklist\n\n1. bump the version\n1. write the notes\n\n# Rollback\n\nRevert the tag.\n";

const yamllintConfig = "extends: default\nrules:\n  line-length:\n    max: 100\n";
const appYml = "---\nserver:\n  host: 0.0.0.0\n  port: 8080\n  port: 8081\nlogging:\n    level: info\n";
const appFixedYml = "---\nserver:\n  host: 0.0.0.0\n  port: 8081\nlogging:\n  level: info\n";
const jobsYml = '---\njobs:\n  - name: nightly\n    cron: "0 3 * * *"\n  - name: weekly\n    cron: "0 4 * * 0"   \nenabled: yes\n';

const pathsSh = `# Path helpers.

join_path() {
  printf '%s/%s\\n' "$1" "$2"
}

ext_of() {
  printf '%s\\n' "\${1#*.}"
}
`;

const testPathsSh = `#!/bin/bash
. "$(dirname "$0")/../lib/paths.sh"

testJoinPlain() {
  assertEquals "a/b" "$(join_path a b)"
}

testJoinTrailingSlash() {
  assertEquals "a/b" "$(join_path a/ b)"
}

testExtOfDottedName() {
  assertEquals "gz" "$(ext_of archive.tar.gz)"
}

testExtOfPlainName() {
  assertEquals "txt" "$(ext_of notes.txt)"
}

. shunit2
`;

export const scenarios: EvalScenario[] = [
  {
    name: "python-two-rounds",
    goal: "The unit tests of calc.py fail. Fix calc.py so that they pass.",
    steps: (p) => [
      write(`${p}/calc.py`, calcPy),
      write(`${p}/test_calc.py`, testCalcPy),
      bash("python3 -m unittest"),
      read(`${p}/calc.py`),
      edit(`${p}/calc.py`, "return a / b", "return a // b"),
      edit(`${p}/calc.py`, "return a * b", "return a / b"),
      bash("python3 -m unittest"),
      edit(`${p}/calc.py`, "return sum(xs) // len(xs)", "return sum(xs) / len(xs)"),
      bash("python3 -m unittest"),
    ],
  },
  {
    name: "rust-build-then-tests",
    goal: "Make the stats crate build and its tests pass.",
    steps: (p) => [
      write(`${p}/Cargo.toml`, statsToml),
      write(`${p}/src/lib.rs`, statsRs),
      bash("cargo test"),
      edit(`${p}/src/lib.rs`, "total / xs.len()", "total / xs.len() as f64"),
      bash("cargo test"),
      edit(
        `${p}/src/lib.rs`,
        "    v[v.len() / 2]\n",
        "    let mid = v.len() / 2;\n    if v.len() % 2 == 0 { (v[mid - 1] + v[mid]) / 2.0 } else { v[mid] }\n",
      ),
      bash("cargo test"),
    ],
  },
  {
    name: "js-node-tests",
    goal: "The cart tests fail; fix cart.js.",
    steps: (p) => [
      write(`${p}/package.json`, `{ "name": "cart", "type": "module", "private": true }\n`),
      write(`${p}/cart.js`, calcJs),
      write(`${p}/cart.test.js`, calcTestJs),
      bash("node --test"),
      edit(`${p}/cart.js`, "amount - amount * percent", "amount - (amount * percent) / 100"),
      bash("node --test"),
    ],
  },
  {
    name: "python-rename-refactor",
    goal: "Rename get_user_name to user_display_name everywhere.",
    steps: (p) => [
      write(`${p}/users.py`, usersPy),
      ...modules.map((m) => write(`${p}/${m}.py`, modulePy(m))),
      write(`${p}/test_headers.py`, refactorTest),
      bash("python3 -m unittest"),
      edit(`${p}/users.py`, "def get_user_name(user):", "def user_display_name(user):"),
      ...modules.flatMap((m) => [
        read(`${p}/${m}.py`),
        { tool: "edit", args: { filePath: `${p}/${m}.py`, oldString: "get_user_name", newString: "user_display_name", replaceAll: true } },
      ]),
      bash("python3 -m unittest"),
    ],
  },
  {
    name: "retry-loop",
    goal: "Get ./check.sh to pass.",
    steps: (p) => [
      write(`${p}/check.sh`, checkSh),
      bash("sh check.sh"),
      bash("sh check.sh"),
      bash("sh check.sh"),
      bash("sh check.sh"),
      bash("mkdir -p build && touch build/ready"),
      bash("sh check.sh"),
    ],
  },
  {
    name: "python-through-compaction",
    goal: "The unit tests of calc.py fail. Fix calc.py so that they pass.",
    compactAt: 4,
    steps: (p) => [
      write(`${p}/calc.py`, calcPy),
      write(`${p}/test_calc.py`, testCalcPy),
      bash("python3 -m unittest"),
      edit(`${p}/calc.py`, "return a * b", "return a / b"),
      bash("python3 -m unittest"),
      edit(`${p}/calc.py`, "return sum(xs) // len(xs)", "return sum(xs) / len(xs)"),
      bash("python3 -m unittest"),
    ],
  },
  {
    name: "c-make-compile-error",
    goal: "make fails to build calc; fix it.",
    steps: (p) => [
      write(`${p}/calc.c`, calcC),
      write(`${p}/Makefile`, "calc: calc.c\n\tcc -Wall -o calc calc.c\n"),
      bash("make"),
      edit(`${p}/calc.c`, "/ count;", "/ n;"),
      bash("make"),
    ],
  },
  {
    // Commands as agents write them: a pipe into tail (exit 0 over a failing
    // run), a grep that finds nothing, a selection of no test, a run killed
    // at the tool's timeout, and the passing run in another form.
    name: "python-agent-habits",
    goal: "The pytest tests of calc.py fail. Fix calc.py so that they pass.",
    steps: (p) => [
      write(`${p}/calc.py`, calcPy),
      write(`${p}/test_calc.py`, testCalcPytest),
      bash(`cd ${p} && python3 -m pytest -q 2>&1 | tail -n 15`),
      bash("grep -n TODO calc.py"),
      bash("python3 -m pytest -q -k smoke"),
      write(`${p}/warm.py`, "import time\n\ntime.sleep(30)\n"),
      { tool: "bash", args: { command: "python3 warm.py", description: "run", timeout: 2000 } },
      write(`${p}/warm.py`, "print('warm')\n"),
      bash("python3 warm.py"),
      edit(`${p}/calc.py`, "return a * b", "return a / b"),
      edit(`${p}/calc.py`, "return sum(xs) // len(xs)", "return sum(xs) / len(xs)"),
      bash("python3 -m pytest -v"),
    ],
  },
  ctestScenario("c-ctest-failures", "Two ctest tests fail; fix test_calc.c's functions.", cmakeLists, testCalcC),
  ctestScenario("c-ctest-many", "Two of calc's 24 ctest tests fail; fix test_calc.c's functions.", cmakeListsMany, testCalcManyC),
  {
    name: "go-tests",
    goal: "Fix the failing Go tests in calc.go.",
    steps: (p) => [
      write(`${p}/go.mod`, goMod),
      write(`${p}/calc.go`, calcGo),
      write(`${p}/calc_test.go`, calcTestGo),
      bash("go test ./..."),
      edit(`${p}/calc.go`, "float64(Sum(xs) / len(xs))", "float64(Sum(xs)) / float64(len(xs))"),
      bash("go test ./..."),
      edit(`${p}/calc.go`, "m := 0", "m := xs[0]"),
      bash("go test ./..."),
    ],
  },
  {
    name: "shell-test-harness",
    goal: "Two of the session tests fail; fix session.sh.",
    steps: (p) => [
      write(`${p}/session.sh`, sessionSh),
      write(`${p}/tests/login.sh`, loginTest),
      write(`${p}/tests/logout.sh`, logoutTest),
      write(`${p}/tests/refresh.sh`, refreshTest),
      write(`${p}/run-tests.sh`, runTestsSh),
      bash("bash run-tests.sh"),
      edit(`${p}/session.sh`, 'unset SESSION_TOKEN; echo "logged out $session_id";', 'SESSION_USER=""; unset SESSION_TOKEN;'),
      bash("bash run-tests.sh"),
      edit(`${p}/session.sh`, 'then echo 401; else echo 200; fi', 'then echo 200; else echo 401; fi'),
      bash("bash run-tests.sh"),
    ],
  },
  {
    // A script that crashes with a traceback, twice, then pytest with two
    // failing tests: a run of one of them passes and leaves the other open.
    name: "python-script-traceback",
    goal: "inventory.py crashes on items.json; fix it and make its tests pass.",
    steps: (p) => [
      write(`${p}/inventory.py`, inventoryPy),
      write(`${p}/items.json`, itemsJson),
      bash("python3 inventory.py items.json"),
      edit(`${p}/inventory.py`, 'item["quantity"]', 'item["qty"]'),
      bash(`cd ${p} && python3 inventory.py items.json 2>&1 | tail -3`),
      write(`${p}/test_inventory.py`, testInventoryPy),
      bash("python3 -m pytest -q"),
      edit(`${p}/inventory.py`, 'float(text.strip("$"))', 'float(text.strip("$").replace(",", "."))'),
      bash("python3 -m pytest -q test_inventory.py::test_parse_price_decimal_comma"),
      edit(`${p}/inventory.py`, 'f"{value:.1f}"', 'f"{value:.2f}"'),
      bash("python3 inventory.py items.json"),
      bash("pytest -x -q"),
    ],
  },
  {
    // ruff: a check, a --fix that leaves errors, a piped concise check
    // (exit 0 over remaining errors), and the clean check.
    name: "python-ruff-lint",
    goal: "Make `ruff check .` pass on report.py.",
    steps: (p) => [
      write(`${p}/pyproject.toml`, `[tool.ruff.lint]\nselect = ["E", "F"]\n`),
      write(`${p}/report.py`, reportPy),
      bash("ruff check ."),
      bash("ruff check --fix ."),
      read(`${p}/report.py`),
      edit(`${p}/report.py`, "render(summarise(rows))", "render(summarize(rows))"),
      bash(`cd ${p} && ruff check --output-format=concise . 2>&1 | head -20`),
      edit(`${p}/report.py`, "    average = total / len(rows)\n", ""),
      bash("ruff check ."),
    ],
  },
  {
    // node's test runner: two failures in two files fixed one at a time; a
    // run of one file passes while the other file's test still fails, and a
    // piped run whose tail hides the failing test's name.
    name: "js-node-two-files",
    goal: "Two shop tests fail; fix src/price.js and src/format.js.",
    steps: (p) => [
      write(`${p}/package.json`, `{ "name": "shop", "type": "module", "private": true }\n`),
      write(`${p}/src/price.js`, priceJs),
      write(`${p}/src/format.js`, formatJs),
      write(`${p}/test/price.test.js`, priceTestJs),
      write(`${p}/test/format.test.js`, formatTestJs),
      bash("node --test"),
      edit(`${p}/src/price.js`, "return net + rate;", "return net * (1 + rate);"),
      bash("node --test test/price.test.js"),
      bash("node --test test/ 2>&1 | tail -20"),
      edit(`${p}/src/format.js`, "${cents / 100}", "${(cents / 100).toFixed(2)}"),
      bash("node --test test/"),
    ],
  },
  {
    // A link error through make, retried unchanged, then a build whose
    // program fails at run time, then all good.
    name: "c-make-link-error",
    goal: "`make && ./app` fails; fix the build and the app.",
    steps: (p) => [
      write(`${p}/config.h`, configH),
      write(`${p}/config.c`, configC),
      write(`${p}/main.c`, appMainC),
      write(`${p}/Makefile`, appMakefile),
      bash("make && ./app"),
      bash("make"),
      read(`${p}/Makefile`),
      edit(`${p}/Makefile`, "app: main.o\n\t$(CC) $(CFLAGS) -o app main.o\n", "app: main.o config.o\n\t$(CC) $(CFLAGS) -o app main.o config.o\n"),
      bash("make && ./app"),
      edit(`${p}/config.c`, "return cfg->port ? -1 : 0;", "return cfg->port ? 0 : -1;"),
      bash(`cd ${p} && make 2>&1 | tail -5 && ./app`),
    ],
  },
  {
    // shellcheck: the default format, a retry in gcc format, fixes, a
    // severity-filtered run piped into head (exit 0 over a warning left),
    // then clean.
    name: "shell-shellcheck",
    goal: "Make deploy.sh pass shellcheck.",
    steps: (p) => [
      write(`${p}/deploy.sh`, deploySh),
      bash("shellcheck deploy.sh"),
      bash("shellcheck -f gcc deploy.sh"),
      edit(
        `${p}/deploy.sh`,
        "cd $release_dir\nfor f in $(ls ../build/*.tar.gz); do\n  cp $f .\n",
        'cd "$release_dir"\nfor f in $(ls ../build/*.tar.gz); do\n  cp "$f" .\n',
      ),
      edit(`${p}/deploy.sh`, "for f in $(ls ../build/*.tar.gz); do", "for f in ../build/*.tar.gz; do"),
      bash(`cd ${p} && shellcheck -S warning deploy.sh 2>&1 | head -20`),
      edit(`${p}/deploy.sh`, "backup=/tmp/backup\n", ""),
      bash('shellcheck deploy.sh && echo "shellcheck clean"'),
    ],
  },
  {
    // bats (TAP when not on a terminal): three of five fail; a filtered
    // run of the fixed ones passes while the third still fails; a piped
    // tail exits 0 over it; then all pass in another form.
    name: "shell-bats",
    goal: "The bats tests of slug.sh fail; fix slug.sh.",
    steps: (p) => [
      write(`${p}/slug.sh`, slugSh),
      write(`${p}/test/slug.bats`, slugBats),
      bash("bats test/"),
      edit(
        `${p}/slug.sh`,
        "tr '[:upper:]' '[:lower:]' | tr ' ' '-'",
        "tr '[:upper:]' '[:lower:]' | tr -cs 'a-z0-9' '-' | sed 's/-$//'",
      ),
      bash("bats -f slugify test/slug.bats"),
      bash(`cd ${p} && bats --tap test/ 2>&1 | tail -5`),
      edit(`${p}/slug.sh`, '  echo "$s"', '  echo "${s%-}"'),
      bash("bats -r test"),
    ],
  },
  {
    // mypy: four errors in two files; a fix that moves an error into the
    // caller; a one-file run; a piped run (exit 0 over errors); then
    // --strict passes.
    name: "python-mypy",
    goal: "Make mypy pass on orders.py and report.py.",
    steps: (p) => [
      write(`${p}/orders.py`, ordersPy),
      write(`${p}/report.py`, orderReportPy),
      bash("mypy ."),
      edit(`${p}/orders.py`, "order_id: int) -> Order:", "order_id: int) -> Optional[Order]:"),
      bash("mypy orders.py"),
      edit(`${p}/orders.py`, "return order.coupon.upper()", 'return (order.coupon or "").upper()'),
      bash(`cd ${p} && mypy . 2>&1 | tail -4`),
      edit(`${p}/orders.py`, "def total_euros(order: Order) -> int:", "def total_euros(order: Order) -> float:"),
      write(`${p}/report.py`, orderReportFixedPy),
      bash("python3 -m mypy --strict ."),
    ],
  },
  {
    // eslint 9+ with a flat config: errors, a --fix that leaves three, two
    // hand fixes, a piped run that exits 0 over the last one, then clean.
    name: "js-eslint",
    goal: "Make `npx eslint .` pass.",
    steps: (p) => [
      write(`${p}/package.json`, `{ "name": "todo", "type": "module", "private": true }\n`),
      write(`${p}/eslint.config.js`, eslintConfig),
      write(`${p}/src/todo.js`, todoJs),
      bash("npx eslint ."),
      bash("npx eslint --fix ."),
      read(`${p}/src/todo.js`),
      edit(`${p}/src/todo.js`, "t.done == false", "!t.done"),
      edit(`${p}/src/todo.js`, "next: ${todos[0].title}", "next: ${first.title}"),
      bash(`cd ${p} && npx eslint src/ 2>&1 | tail -5`),
      edit(`${p}/src/todo.js`, "loadTodo(path)", "loadTodos(path)"),
      bash('npx eslint . --max-warnings 0 && echo "lint ok"'),
    ],
  },
  {
    // tsc: three errors in two files, the same command retried, two fixes,
    // a piped run (exit 0 over the last error), then clean.
    name: "ts-tsc",
    goal: "Fix the type errors `npx tsc --noEmit` reports.",
    steps: (p) => [
      write(`${p}/package.json`, `{ "name": "billing", "type": "module", "private": true }\n`),
      write(`${p}/tsconfig.json`, tsconfigJson),
      write(`${p}/src/invoice.ts`, invoiceTs),
      write(`${p}/src/render.ts`, renderTs),
      bash("npx tsc --noEmit"),
      bash("npx tsc --noEmit"),
      edit(`${p}/src/invoice.ts`, "  paidAt?: Date;\n", "  dueDate: Date;\n  paidAt?: Date;\n"),
      edit(`${p}/src/render.ts`, "const total: string = subtotal(invoice);", "const total = subtotal(invoice).toFixed(2);"),
      bash(`cd ${p} && npx tsc --noEmit -p . 2>&1 | head -20`),
      edit(`${p}/src/render.ts`, "return invoice.paidAt.toISOString();", 'return invoice.paidAt?.toISOString() ?? "unpaid";'),
      bash('npx tsc -p tsconfig.json --noEmit && echo "types ok"'),
    ],
  },
  {
    // jest: two failures in one file; a -t run of the fixed test passes
    // while the other still fails; a piped tail that hides its name; then
    // npm test passes.
    name: "js-jest",
    goal: "Two jest tests fail; fix src/duration.js.",
    steps: (p) => [
      write(`${p}/package.json`, `{ "name": "timing", "private": true, "scripts": { "test": "jest" } }\n`),
      write(`${p}/src/duration.js`, durationJs),
      write(`${p}/src/retry.js`, retryJs),
      write(`${p}/__tests__/duration.test.js`, durationTestJs),
      write(`${p}/__tests__/retry.test.js`, retryTestJs),
      bash("npx jest"),
      edit(`${p}/src/duration.js`, "h: 360000 }", "h: 3600000 }"),
      bash('npx jest -t "parses hours"'),
      bash(`cd ${p} && npx jest --silent 2>&1 | tail -20`),
      edit(
        `${p}/src/duration.js`,
        "  return `${Math.floor(ms / 60000)}m`;",
        "  const m = Math.floor(ms / 60000);\n  const s = Math.round((ms % 60000) / 1000);\n  return s ? `${m}m${s}s` : `${m}m`;",
      ),
      bash("npm test -- --ci"),
    ],
  },
  {
    // mocha (exit status = failures): three fail, one fix, the dot
    // reporter, a --grep run of one fixed test while another still fails,
    // then the spec reporter passes.
    name: "js-mocha",
    goal: "The mocha tests of lib/queue.js fail; fix it.",
    steps: (p) => [
      write(`${p}/package.json`, `{ "name": "queue", "private": true }\n`),
      write(`${p}/lib/queue.js`, queueJs),
      write(`${p}/test/queue.test.js`, queueTestJs),
      bash("npx mocha"),
      edit(`${p}/lib/queue.js`, "a.priority - b.priority", "b.priority - a.priority"),
      bash("npx mocha --reporter dot"),
      edit(`${p}/lib/queue.js`, "return this.items.shift().value;", "return this.items.shift()?.value;"),
      bash('npx mocha -g "pop returns"'),
      edit(`${p}/lib/queue.js`, "return this.items[0].value;", "return this.items[0]?.value;"),
      bash("npx mocha --reporter spec test/"),
    ],
  },
  {
    // clippy: warnings (exit 0), the same as errors with -D warnings, a fix,
    // a quiet piped run (exit 0 over two errors), then clean and tested.
    name: "rust-clippy",
    goal: "Make `cargo clippy --all-targets -- -D warnings` pass.",
    steps: (p) => [
      write(`${p}/Cargo.toml`, wordfreqToml),
      write(`${p}/src/lib.rs`, wordfreqRs),
      bash("cargo clippy"),
      bash("cargo clippy --all-targets -- -D warnings"),
      edit(
        `${p}/src/lib.rs`,
        "        if counts.contains_key(&word) {\n            *counts.get_mut(&word).unwrap() += 1;\n        } else {\n            counts.insert(word, 1);\n        }\n",
        "        *counts.entry(word).or_insert(0) += 1;\n",
      ),
      bash(`cd ${p} && cargo clippy -q --all-targets -- -D warnings 2>&1 | head -30`),
      edit(`${p}/src/lib.rs`, "    return text.trim().len() == 0;", "    text.trim().is_empty()"),
      bash("cargo clippy --all-targets -- -D warnings && cargo test -q"),
    ],
  },
  {
    // go vet, then go test with two failures: a -run subset of the fixed
    // test passes while the other still fails, a verbose piped subset
    // (exit 0 over it), then all pass.
    name: "go-vet-and-tests",
    goal: "Make `go vet ./...` and `go test ./...` pass.",
    steps: (p) => [
      write(`${p}/go.mod`, "module example.com/hits\n\ngo 1.19\n"),
      write(`${p}/hits.go`, hitsGo),
      write(`${p}/hits_test.go`, hitsTestGo),
      bash("go vet ./..."),
      edit(`${p}/hits.go`, "func (c Counter) Get(", "func (c *Counter) Get("),
      edit(`${p}/hits.go`, "`json:hits`", '`json:"hits"`'),
      bash("go vet ./... && go test ./..."),
      edit(`${p}/hits.go`, "Path: fields[1]", "Path: fields[0]"),
      bash("go test -run TestParseLine ./..."),
      bash(`cd ${p} && go test -v -run 'TestTop' ./... 2>&1 | tail -15`),
      edit(`${p}/hits.go`, "all[i].Hits < all[j].Hits", "all[i].Hits > all[j].Hits"),
      bash("go test -count=1 ./..."),
    ],
  },
  {
    // vitest (colored output): failures in two files; one file's run
    // passes while the other's test still fails; a piped dot-reporter tail
    // (exit 0 over it); then all pass.
    name: "js-vitest",
    goal: "Two vitest tests fail; fix src/money.js and src/cart.js.",
    steps: (p) => [
      write(`${p}/package.json`, `{ "name": "checkout", "type": "module", "private": true }\n`),
      write(`${p}/vitest.config.js`, "export default { test: { globals: true } };\n"),
      write(`${p}/src/money.js`, moneyJs),
      write(`${p}/src/money.test.js`, moneyTestJs),
      write(`${p}/src/cart.js`, cartLinesJs),
      write(`${p}/src/cart.test.js`, cartLinesTestJs),
      bash("npx vitest run"),
      edit(`${p}/src/money.js`, "`€${Math.floor(cents / 100)}.${cents % 100}`", "`€${(cents / 100).toFixed(2)}`"),
      bash("npx vitest run src/money.test.js"),
      bash(`cd ${p} && npx vitest run --reporter=dot 2>&1 | tail -25`),
      edit(`${p}/src/cart.js`, "existing.qty = item.qty;", "existing.qty += item.qty;"),
      bash("npx vitest --run"),
    ],
  },
  {
    // tsc through an auto-compaction: one of two type errors is still open
    // when the context is compacted; it is fixed after.
    name: "ts-through-compaction",
    goal: "Fix the type errors `npx tsc --noEmit` reports.",
    compactAt: 5,
    steps: (p) => [
      write(`${p}/package.json`, `{ "name": "shipping", "type": "module", "private": true }\n`),
      write(`${p}/tsconfig.json`, tsconfigJson),
      write(`${p}/src/shipping.ts`, shippingTs),
      bash("npx tsc --noEmit"),
      edit(`${p}/src/shipping.ts`, 'shippingCost(parcel, "express")', "shippingCost(parcel)"),
      bash("npx tsc --noEmit"),
      read(`${p}/src/shipping.ts`),
      edit(`${p}/src/shipping.ts`, "cheapestZone(parcels: Parcel[]): Zone {", "cheapestZone(parcels: Parcel[]): Zone | null {"),
      bash('npx tsc --noEmit -p . && echo "types ok"'),
    ],
  },
  // --- Known families, written by an independent helper from real output.
  {
    // rspec with example persistence: three failures; --only-failures runs
    // keep one failing (once through a piped tail); --next-failure; full run.
    name: "ruby-rspec",
    goal: "Three Inventory specs fail; fix lib/inventory.rb.",
    steps: (p) => [
      write(`${p}/lib/inventory.rb`, inventoryRb),
      write(`${p}/spec/inventory_spec.rb`, inventorySpecRb),
      bash("rspec"),
      edit(`${p}/lib/inventory.rb`, "@items[sku] = qty", "@items[sku] = @items.fetch(sku, 0) + qty"),
      bash("rspec --only-failures"),
      edit(`${p}/lib/inventory.rb`, "    @items[sku]\n", "    @items.fetch(sku, 0)\n"),
      bash("rspec --only-failures 2>&1 | tail -n 15"),
      edit(`${p}/lib/inventory.rb`, "qty < threshold", "qty <= threshold"),
      bash("rspec --next-failure"),
      bash("rspec --format documentation"),
    ],
  },
  {
    // minitest through rake: three failures; a one-test run of the fixed
    // one passes; `rake test || true` exits 0 over two; then all pass.
    name: "ruby-minitest-rake",
    goal: "`rake test` fails; fix lib/slug.rb.",
    steps: (p) => [
      write(`${p}/lib/slug.rb`, slugRb),
      write(`${p}/test/test_slug.rb`, testSlugRb),
      write(`${p}/Rakefile`, slugRakefile),
      bash("rake test"),
      edit(`${p}/lib/slug.rb`, 'text.downcase.gsub(" ", "-")', 'text.downcase.gsub(/ +/, "-")'),
      bash("ruby -Ilib -Itest test/test_slug.rb -n test_squeezes_repeated_spaces"),
      bash("rake test || true"),
      write(
        `${p}/lib/slug.rb`,
        'module Slug\n  def self.slugify(text)\n    text.downcase.gsub(/[^a-z0-9]+/, "-").gsub(/\\A-|-\\z/, "")\n  end\n\n  def self.truncate(slug, max)\n    slug[0, max].chomp("-")\n  end\nend\n',
      ),
      bash("rake test"),
    ],
  },
  {
    // phpunit: three failures; a --filter run of the fixed ones passes; a
    // --stop-on-failure run masked by `; echo`; then all pass (--testdox).
    name: "php-phpunit",
    goal: "Fix the failing PHPUnit tests of src/Temperature.php.",
    steps: (p) => [
      write(`${p}/src/Temperature.php`, temperaturePhp),
      write(`${p}/tests/TemperatureTest.php`, temperatureTestPhp),
      write(`${p}/phpunit.xml`, phpunitXml),
      bash("phpunit"),
      edit(`${p}/src/Temperature.php`, "return $fahrenheit - 32 * 5 / 9;", "return ($fahrenheit - 32) * 5 / 9;"),
      bash("phpunit --filter InCelsius"),
      bash('phpunit --stop-on-failure; echo "exit: $?"'),
      edit(`${p}/src/Temperature.php`, "if ($celsius < 0) {", "if ($celsius <= 0) {"),
      bash("phpunit --testdox"),
    ],
  },
  {
    // JUnit 5's console launcher through a shell script: two failures, a
    // piped tail (exit 0 over one), then all pass.
    name: "java-junit5",
    goal: "`bash test.sh` fails; fix src/BoundedStack.java.",
    steps: (p) => [
      write(`${p}/src/BoundedStack.java`, boundedStackJava),
      write(`${p}/test/BoundedStackTest.java`, boundedStackTestJava),
      write(`${p}/test.sh`, junitTestSh),
      bash("bash test.sh"),
      edit(`${p}/src/BoundedStack.java`, "return items.remove(0);", "return items.remove(items.size() - 1);"),
      bash("bash test.sh 2>&1 | tail -n 20"),
      edit(`${p}/src/BoundedStack.java`, "items.size() > capacity", "items.size() >= capacity"),
      bash("bash test.sh"),
    ],
  },
  {
    // flake8 then pylint: flake8 errors, a `cd app &&` run piped into head
    // (exit 0 over one), pylint's exit bits through `&&`, `|| true`, clean.
    name: "python-flake8-pylint",
    goal: "Make `flake8 app/ && pylint app/` pass.",
    steps: (p) => [
      write(`${p}/app/__init__.py`, '"""Sales reports."""\n'),
      write(`${p}/app/report.py`, reportFlakePy),
      bash("flake8 app/"),
      edit(`${p}/app/report.py`, "import os\nimport sys\n", ""),
      bash("cd app && flake8 . | head -n 20"),
      edit(
        `${p}/app/report.py`,
        "from collections import defaultdict\n",
        'import csv\nfrom collections import defaultdict\n\n\ndef load_rows(path):\n    with open(path, newline="", encoding="utf-8") as f:\n        return [\n            {"region": r["region"], "amount": int(r["amount"])}\n            for r in csv.DictReader(f)\n        ]\n',
      ),
      bash("flake8 app/ && pylint app/"),
      bash("pylint app/ --disable=missing-function-docstring || true"),
      write(`${p}/app/report.py`, reportFlakeFixedPy),
      bash("flake8 app/ && pylint app/"),
    ],
  },
  {
    // doctest then unittest through `make test` (make stops at the first
    // failing line), a masked `timeout 60 python3 -m unittest`, then pass.
    name: "python-doctest-make",
    goal: "`make test` fails; fix textstats.py.",
    steps: (p) => [
      write(`${p}/textstats.py`, textstatsPy),
      write(`${p}/test_textstats.py`, testTextstatsPy),
      write(`${p}/Makefile`, textstatsMakefile),
      bash("make test"),
      edit(`${p}/textstats.py`, 'return len(text.split(" "))', "return len(text.split())"),
      bash("make test"),
      edit(`${p}/textstats.py`, "sum(len(w) for w in words) // len(words)", "sum(len(w) for w in words) / len(words)"),
      bash("timeout 60 python3 -m unittest 2>&1 | tail -n 12"),
      edit(`${p}/textstats.py`, "return min(words, key=len)", "return sorted(words, key=len)[-1]"),
      bash("make test"),
    ],
  },
  {
    // prove through `npm run test`: failures in two files; a one-file
    // prove passes while the other file fails; a piped verbose run (exit 0
    // over it); then all pass.
    name: "perl-prove",
    goal: "`npm run test` fails; fix lib/Roman.pm.",
    steps: (p) => [
      write(`${p}/lib/Roman.pm`, romanPm),
      write(`${p}/t/roman.t`, romanT),
      write(`${p}/t/range.t`, rangeT),
      write(`${p}/package.json`, `{ "name": "numerals", "version": "1.0.0", "private": true, "scripts": { "test": "prove -l t/" } }\n`),
      bash("npm run test"),
      edit(
        `${p}/lib/Roman.pm`,
        "[500, 'D'], [100, 'C'], [50, 'L'], [10, 'X'], [5, 'V'], [1, 'I']",
        "[900, 'CM'], [500, 'D'], [400, 'CD'], [100, 'C'], [90, 'XC'], [50, 'L'], [40, 'XL'], [10, 'X'], [9, 'IX'], [5, 'V'], [4, 'IV'], [1, 'I']",
      ),
      bash("prove -l t/roman.t"),
      bash("prove -lv t/ 2>&1 | tail -n 12"),
      edit(`${p}/lib/Roman.pm`, "    my ($n) = @_;\n", "    my ($n) = @_;\n    die \"to_roman: $n is out of range\\n\" if $n < 1 || $n > 3999;\n"),
      bash("npm run test"),
    ],
  },
  // --- Held-out tools: output formats the HUD's authors have not looked at.
  {
    // Test::More run directly by perl (exit = failures), a piped tail.
    name: "perl-test-more",
    goal: "t/duration.t fails; fix lib/Duration.pm.",
    steps: (p) => [
      write(`${p}/lib/Duration.pm`, durationPm),
      write(`${p}/t/duration.t`, durationT),
      bash("perl -Ilib t/duration.t"),
      edit(`${p}/lib/Duration.pm`, "h => 360)", "h => 3600)"),
      bash("perl -Ilib t/duration.t 2>&1 | tail -n 6"),
      edit(`${p}/lib/Duration.pm`, "return sprintf('%dm%ds', $m, $s);", "return $s ? sprintf('%dm%ds', $m, $s) : sprintf('%dm', $m);"),
      bash("perl -Ilib t/duration.t"),
    ],
  },
  {
    // busted (Lua): a piped tail over two failures (exit 0) as the first
    // run, then one failure with its real exit, then pass.
    name: "lua-busted",
    goal: "The busted specs of src/wordwrap.lua fail; fix it.",
    steps: (p) => [
      write(`${p}/src/wordwrap.lua`, wordwrapLua),
      write(`${p}/spec/wordwrap_spec.lua`, wordwrapSpecLua),
      bash("busted 2>&1 | tail -n 12"),
      edit(`${p}/src/wordwrap.lua`, "#line + #word > width", "#line + 1 + #word > width"),
      bash("busted"),
      edit(`${p}/src/wordwrap.lua`, "return #M.wrap(text, width) - 1", "return #M.wrap(text, width)"),
      bash("busted"),
    ],
  },
  {
    // javac: a syntax error, then two type errors, a piped head over the
    // last one, then it builds and runs.
    name: "java-javac",
    goal: "The app does not compile; fix it and run it.",
    steps: (p) => [
      write(`${p}/src/app/Invoice.java`, invoiceJava),
      write(`${p}/src/app/Main.java`, invoiceMainJava),
      bash("javac -d out src/app/*.java"),
      edit(`${p}/src/app/Invoice.java`, "return total\n", "return total;\n"),
      bash("javac -d out src/app/*.java"),
      edit(`${p}/src/app/Main.java`, "inv.formated()", "inv.formatted()"),
      bash("javac -d out src/app/*.java 2>&1 | head -n 5"),
      edit(`${p}/src/app/Main.java`, "String cents = inv.totalCents();", "long cents = inv.totalCents();"),
      bash("javac -d out src/app/*.java"),
      bash("java -cp out app.Main"),
    ],
  },
  {
    // cppcheck with --error-exitcode: three errors, two fixes, a piped
    // tail over the last, then clean.
    name: "c-cppcheck",
    goal: "Make `cppcheck -q --error-exitcode=1 src/` pass.",
    steps: (p) => [
      write(`${p}/src/ring.c`, ringC),
      bash("cppcheck -q --error-exitcode=1 src/"),
      edit(`${p}/src/ring.c`, "return r->slots[SLOTS];", "return r->slots[SLOTS - 1];"),
      edit(`${p}/src/ring.c`, "        return NULL;\n", "        free(name);\n        return NULL;\n"),
      bash("cppcheck -q --error-exitcode=1 src/ 2>&1 | tail -n 5"),
      edit(`${p}/src/ring.c`, "int total;", "int total = 0;"),
      bash("cppcheck -q --error-exitcode=1 src/"),
    ],
  },
  {
    // xmllint with a schema: not well-formed, then invalid, a grep over
    // the last error (exit 0), then valid.
    name: "xml-xmllint",
    goal: "catalog.xml must validate against catalog.xsd.",
    steps: (p) => [
      write(`${p}/catalog.xsd`, catalogXsd),
      write(`${p}/catalog.xml`, catalogXml),
      bash("xmllint --noout --schema catalog.xsd catalog.xml"),
      edit(`${p}/catalog.xml`, "<title>Emma</titel>", "<title>Emma</title>"),
      bash("xmllint --noout --schema catalog.xsd catalog.xml"),
      edit(`${p}/catalog.xml`, "<price>7,50</price>", "<price>7.50</price>"),
      bash("xmllint --noout --schema catalog.xsd catalog.xml 2>&1 | grep -i error"),
      edit(`${p}/catalog.xml`, "  <book>\n", '  <book id="b3">\n'),
      bash("xmllint --noout --schema catalog.xsd catalog.xml"),
    ],
  },
  {
    // ExUnit through mix: two failures, a piped tail over one, a --failed
    // rerun that passes, then the whole suite.
    name: "elixir-exunit",
    goal: "`mix test` fails; fix lib/wallet.ex.",
    steps: (p) => [
      write(`${p}/mix.exs`, walletMixExs),
      write(`${p}/lib/wallet.ex`, walletEx),
      write(`${p}/test/test_helper.exs`, "ExUnit.start()\n"),
      write(`${p}/test/wallet_test.exs`, walletTestExs),
      bash("mix test"),
      edit(`${p}/lib/wallet.ex`, "div(balance * percent, 10)", "div(balance * percent, 100)"),
      bash("mix test 2>&1 | tail -n 15"),
      edit(
        `${p}/lib/wallet.ex`,
        "  def withdraw(balance, amount) when",
        "  def withdraw(_balance, amount) when amount <= 0, do: {:error, :invalid_amount}\n  def withdraw(balance, amount) when",
      ),
      bash("mix test --failed"),
      bash("mix test"),
    ],
  },
  {
    // bandit (-ll): three findings, one fixed, a piped tail over two, clean.
    name: "python-bandit",
    goal: "Make `bandit -r app/ -ll` pass.",
    steps: (p) => [
      write(`${p}/app/tasks.py`, tasksPy),
      bash("bandit -r app/ -ll"),
      write(`${p}/app/tasks.py`, tasksHalfFixedPy),
      bash("bandit -r app/ -ll 2>&1 | tail -n 20"),
      write(`${p}/app/tasks.py`, tasksFixedPy),
      bash("bandit -r app/ -ll"),
    ],
  },
  {
    // codespell: misspellings, a -w run that fixes some, a piped head over
    // the rest, a hand fix, then clean.
    name: "docs-codespell",
    goal: "Fix the spelling errors codespell finds in the docs.",
    steps: (p) => [
      write(`${p}/README.md`, spellReadme),
      write(`${p}/docs/setup.md`, spellSetup),
      bash("codespell README.md docs/"),
      bash("codespell -w README.md docs/"),
      bash("codespell README.md docs/ | head -n 5"),
      edit(`${p}/docs/setup.md`, "so ther is", "so there is"),
      bash("codespell README.md docs/"),
    ],
  },
  // --- Held-out tools, second set.
  {
    // EUnit through `make test` (make exits 2): three failures in two
    // modules, a one-module run by SPEC= that passes, a piped tail over the
    // rest (exit 0), then all pass.
    name: "erlang-eunit",
    goal: "`make test` fails; fix the temperature modules.",
    steps: (p) => [
      write(`${p}/src/temp.erl`, tempErl),
      write(`${p}/src/label.erl`, labelErl),
      write(`${p}/Makefile`, eunitMakefile),
      bash("make test"),
      edit(`${p}/src/label.erl`, "label(C) when C < 0 -> freezing;", "label(C) when C =< 0 -> freezing;"),
      bash("make test SPEC=label"),
      bash("make test 2>&1 | tail -n 6"),
      edit(`${p}/src/temp.erl`, "C * 9 / 5 + 23.", "C * 9 / 5 + 32."),
      bash("make test"),
    ],
  },
  {
    // tcltest through `cd tests && tclsh all.tcl`: two failures, a -match
    // run that passes, a `; echo "done"` run (exit 0), then all pass.
    name: "tcl-tcltest",
    goal: "The tcltest suite fails; fix lib/slug.tcl.",
    steps: (p) => [
      write(`${p}/lib/slug.tcl`, slugTcl),
      write(`${p}/tests/slug.test`, slugTest),
      write(`${p}/tests/all.tcl`, tclAllTcl),
      bash("cd tests && tclsh all.tcl"),
      edit(`${p}/lib/slug.tcl`, "string range $text 0 $n]", "string range $text 0 [expr {$n - 1}]]"),
      bash("cd tests && tclsh all.tcl -match 'trunc-*'"),
      bash('tclsh tests/all.tcl; echo "done"'),
      edit(`${p}/lib/slug.tcl`, "    regsub -all {[^a-z0-9]+} $s - s\n", "    regsub -all {[^a-z0-9]+} $s - s\n    set s [string trim $s -]\n"),
      bash("cd tests && tclsh all.tcl"),
    ],
  },
  {
    // Ruby's test-unit run directly under `timeout 60`: two failures, a -n
    // run of one test that passes, an `|| true` run (exit 0), then pass.
    name: "ruby-test-unit",
    goal: "test/test_cart.rb fails; fix lib/cart.rb.",
    steps: (p) => [
      write(`${p}/lib/cart.rb`, cartRb),
      write(`${p}/test/test_cart.rb`, testCartRb),
      bash("timeout 60 ruby -Ilib test/test_cart.rb"),
      edit(`${p}/lib/cart.rb`, "if qty.negative?", "unless qty.positive?"),
      bash("ruby -Ilib test/test_cart.rb -n test_rejects_zero_qty"),
      bash("ruby -Ilib test/test_cart.rb || true"),
      edit(`${p}/lib/cart.rb`, "@items.sum { |i| i.price_cents }", "@items.sum { |i| i.price_cents * i.qty }"),
      bash("timeout 60 ruby -Ilib test/test_cart.rb"),
    ],
  },
  {
    // testthat through `cd tests && Rscript -e …`: a failure in each of two
    // files, a test_file run of one that passes, an `|| true` run of the
    // whole folder (exit 0), then all pass.
    name: "r-testthat",
    goal: "The testthat tests fail; fix R/stats.R.",
    steps: (p) => [
      write(`${p}/R/stats.R`, statsR),
      write(`${p}/tests/testthat/test-mean.R`, testMeanR),
      write(`${p}/tests/testthat/test-mode.R`, testModeR),
      bash(`cd tests && Rscript -e 'testthat::test_dir("testthat")'`),
      edit(`${p}/R/stats.R`, "which.min(counts)", "which.max(counts)"),
      bash(`Rscript -e 'testthat::test_file("tests/testthat/test-mode.R")'`),
      bash(`Rscript -e 'testthat::test_dir("tests/testthat")' || true`),
      edit(`${p}/R/stats.R`, "mean(x[k:(length(x) - k)])", "mean(x[(k + 1):(length(x) - k)])"),
      bash(`cd tests && Rscript -e 'testthat::test_dir("testthat")'`),
    ],
  },
  {
    // Alcotest through `timeout 60 dune test` (dune creates dune-project
    // first): two failures, a `dune exec … -- test capitalize` run that
    // passes, a piped tail (exit 0), then all pass.
    name: "ocaml-alcotest",
    goal: "`dune test` fails; fix wordc.ml.",
    steps: (p) => [
      write(`${p}/dune`, wordcDune),
      write(`${p}/wordc.ml`, wordcMl),
      write(`${p}/test_wordc.ml`, testWordcMl),
      bash("timeout 60 dune test"),
      edit(`${p}/wordc.ml`, 'String.concat ""', 'String.concat " "'),
      bash("dune exec ./test_wordc.exe -- test capitalize"),
      bash("dune test 2>&1 | tail -n 5"),
      edit(
        `${p}/wordc.ml`,
        "String.split_on_char ' ' s",
        "String.map (fun c -> if c = '\\t' then ' ' else c) s |> String.split_on_char ' '",
      ),
      bash("timeout 60 dune test"),
    ],
  },
  {
    // stylelint through `npm run lint:css` (exit 2): four problems in two
    // files, a one-file run that passes, an `|| true` run over the rest
    // (exit 0), then clean.
    name: "css-stylelint",
    goal: "`npm run lint:css` fails; fix the stylesheets.",
    steps: (p) => [
      write(`${p}/package.json`, stylePackageJson),
      write(`${p}/css/base.css`, baseCss),
      write(`${p}/css/layout.css`, layoutCss),
      bash("npm run lint:css"),
      edit(`${p}/css/base.css`, "  color: #06c;\n", ""),
      bash("stylelint css/base.css"),
      bash("stylelint css/*.css || true"),
      write(`${p}/css/layout.css`, layoutFixedCss),
      bash("npm run lint:css"),
    ],
  },
  {
    // isort --check-only through `make lint` (make exits 2): two files, a
    // hand fix and a one-file check that passes, a piped head (exit 0), an
    // isort run that fixes the other, then clean.
    name: "python-isort",
    goal: "`make lint` fails on import order; fix it.",
    steps: (p) => [
      write(`${p}/app/report.py`, reportIsortPy),
      write(`${p}/app/cli.py`, cliIsortPy),
      write(`${p}/Makefile`, ".PHONY: lint\nlint:\n\tisort --check-only app/\n"),
      bash("make lint"),
      edit(`${p}/app/cli.py`, "from app.report import main\nimport argparse\n", "import argparse\n\nfrom app.report import main\n"),
      bash("isort --check-only app/cli.py"),
      bash("isort --check-only app/ 2>&1 | head -n 3"),
      bash("isort app/report.py"),
      bash("make lint"),
    ],
  },
  {
    // tidy through `bash scripts/check.sh` (exit 1): a warning in one page,
    // an error in the other, a one-page tidy that passes, a piped tail
    // (exit 0), then clean.
    name: "html-tidy",
    goal: "`bash scripts/check.sh` fails; fix the pages.",
    steps: (p) => [
      write(`${p}/site/index.html`, indexHtml),
      write(`${p}/site/about.html`, aboutHtml),
      write(`${p}/scripts/check.sh`, tidyCheckSh),
      bash("bash scripts/check.sh"),
      edit(`${p}/site/index.html`, '<img src="logo.png">', '<img src="logo.png" alt="Logo">'),
      bash("tidy -qe site/index.html"),
      bash("bash scripts/check.sh 2>&1 | tail -n 4"),
      write(`${p}/site/about.html`, aboutFixedHtml),
      bash("bash scripts/check.sh"),
    ],
  },
  // --- Held-out tools, third set.
  {
    // pycodestyle through `make style` with @ recipes (make exits 2): a
    // one-file run that passes, a `| grep -v` run (exit 0), then clean.
    name: "python-pycodestyle",
    goal: "`make style` fails; fix the style problems in pkg/.",
    steps: (p) => [
      write(`${p}/pkg/geo.py`, geoPy),
      write(`${p}/pkg/units.py`, unitsPy),
      write(`${p}/Makefile`, styleMakefile),
      bash("make style"),
      edit(`${p}/pkg/units.py`, "if unit == None:", "if unit is None:"),
      bash("pycodestyle pkg/units.py"),
      bash("make style 2>&1 | grep -v '^=='"),
      write(`${p}/pkg/geo.py`, geoFixedPy),
      bash("make style"),
    ],
  },
  {
    // php -l in a for loop whose last file passes (exit 0), then a
    // hand-written PASS/FAIL runner that fails, the loop clean, then pass.
    name: "php-lint-runner",
    goal: "Fix src/ so that it parses and `php tests/run.php` passes.",
    steps: (p) => [
      write(`${p}/src/Money.php`, moneyPhp),
      write(`${p}/src/Slug.php`, slugPhp),
      write(`${p}/tests/run.php`, runPhp),
      bash('for f in src/*.php; do php -l "$f"; done'),
      edit(`${p}/src/Money.php`, "STR_PAD_LEFT)\n", "STR_PAD_LEFT);\n"),
      bash("php tests/run.php"),
      bash('for f in src/*.php; do php -l "$f"; done'),
      edit(`${p}/src/Money.php`, "(int) $frac;", "(int) str_pad(substr($frac, 0, 2), 2, '0');"),
      bash("php tests/run.php"),
    ],
  },
  {
    // sqlite3 running an assertion script through `cd db && … < check.sql`
    // (exit 1), a `set -o pipefail; … | tail` run that still fails (exit 1),
    // then pass.
    name: "sql-sqlite-asserts",
    goal: "`cd db && sqlite3 :memory: < check.sql` fails; fix views.sql.",
    steps: (p) => [
      write(`${p}/db/schema.sql`, shopSchemaSql),
      write(`${p}/db/views.sql`, shopViewsSql),
      write(`${p}/db/check.sql`, shopCheckSql),
      bash("cd db && sqlite3 :memory: < check.sql"),
      edit(`${p}/db/views.sql`, "ON o.customer_id = c.id\n", "ON o.customer_id = c.id AND o.status = 'paid'\n"),
      bash("set -o pipefail; cd db && sqlite3 :memory: < check.sql 2>&1 | tail -n 3"),
      edit(
        `${p}/db/views.sql`,
        "SELECT c.name, SUM(o.cents) AS total\nFROM customers c JOIN",
        "SELECT c.name, COALESCE(SUM(o.cents), 0) AS total\nFROM customers c LEFT JOIN",
      ),
      bash("cd db && sqlite3 :memory: < check.sql"),
    ],
  },
  {
    // A golden test with `awk … | diff -u expected -` (exit 1), an
    // `|| echo failed` run that still differs (exit 0), then no diff.
    name: "awk-golden-diff",
    goal: "The region report does not match tests/expected.txt; fix report.awk.",
    steps: (p) => [
      write(`${p}/report.awk`, regionAwk),
      write(`${p}/sales.csv`, salesCsv),
      write(`${p}/tests/expected.txt`, regionExpected),
      bash("awk -F, -f report.awk sales.csv | diff -u tests/expected.txt -"),
      edit(`${p}/report.awk`, "{ total[$1] += $2; n[$1]++ }", "NR == 1 { next }\n{ total[$1] += $2; n[$1]++ }"),
      bash("awk -F, -f report.awk sales.csv | diff -u tests/expected.txt - || echo failed"),
      edit(`${p}/report.awk`, '"%s %d %d\\n"', '"%s %d %.2f\\n"'),
      bash("awk -F, -f report.awk sales.csv | diff -u tests/expected.txt -"),
    ],
  },
  {
    // A Node assert-based script with its own ok/not ok lines under
    // `timeout 30` (exit 1): a one-function run that passes, a `| tee` run
    // and a `| grep -v '^ok'` run (both exit 0), then pass.
    name: "js-assert-script",
    goal: "`node test/check.mjs` fails; fix src/duration.mjs.",
    steps: (p) => [
      write(`${p}/src/duration.mjs`, durationMjs),
      write(`${p}/test/check.mjs`, checkDurationMjs),
      bash("timeout 30 node test/check.mjs"),
      edit(`${p}/src/duration.mjs`, "  const re = /", "  if (/^\\d+$/.test(text)) return Number(text);\n  const re = /"),
      bash("node test/check.mjs parseDuration"),
      bash("node test/check.mjs 2>&1 | tee test.log"),
      bash("node test/check.mjs | grep -v '^ok'"),
      edit(`${p}/src/duration.mjs`, "Math.floor(seconds / 60)", "Math.floor((seconds % 3600) / 60)"),
      bash("timeout 30 node test/check.mjs"),
    ],
  },
  {
    // dash -n over the scripts with `set -e` in a for loop (exit 2, a
    // banner per file): a one-file check that passes, a `; echo "rc=$?"`
    // run (exit 0), then clean.
    name: "shell-dash-n",
    goal: "The scripts in bin/ have syntax errors; fix them.",
    steps: (p) => [
      write(`${p}/bin/backup.sh`, backupSh),
      write(`${p}/bin/rotate.sh`, rotateSh),
      bash('set -e; for f in bin/*.sh; do echo "== $f"; dash -n "$f"; done'),
      edit(`${p}/bin/backup.sh`, '$stamp"\necho', '$stamp"\ndone\necho'),
      bash('dash -n bin/backup.sh && echo "backup.sh ok"'),
      bash('for f in bin/*.sh; do dash -n "$f"; done; echo "rc=$?"'),
      edit(`${p}/bin/rotate.sh`, 'if [ -f "$dir/$old" ]\n', 'if [ -f "$dir/$old" ]; then\n'),
      bash('set -e; for f in bin/*.sh; do echo "== $f"; dash -n "$f"; done'),
    ],
  },
  // --- Held-out tools, fourth set.
  {
    // libcheck through `make -k check`: a compile error in one test unit
    // and a failing check in the other in one run (exit 2), a CK_RUN_CASE
    // that names no case (0 checks, exit 0), a subset that passes, a piped
    // tail (exit 0), then all pass.
    name: "c-libcheck",
    goal: "`make -k check` fails; fix the money code and its tests.",
    steps: (p) => [
      write(`${p}/src/money.h`, moneyH),
      write(`${p}/src/money.c`, moneyC),
      write(`${p}/tests/check_round.c`, checkRoundC),
      write(`${p}/tests/check_parse.c`, checkParseC),
      write(`${p}/Makefile`, checkMakefile),
      bash("make -k check"),
      edit(`${p}/tests/check_parse.c`, '"twelve", &cent)', '"twelve", &cents)'),
      bash("CK_RUN_CASE=Parse make check"),
      bash("CK_RUN_CASE=Parsing make check-parse"),
      bash("make check 2>&1 | tail -n 3"),
      write(`${p}/src/money.c`, moneyFixedC),
      bash("make check"),
    ],
  },
  {
    // cmocka and a demo program through make: `make run` segfaults (make
    // exits 2), `make test || true` (two tests crash, exit 0), a fix, the
    // demo runs, a TEST_FILTER subset passes, a piped tail over the last
    // failure (exit 0), then all pass.
    name: "c-cmocka-crash",
    goal: "`make run` crashes and `make test` fails; fix src/queue.c.",
    steps: (p) => [
      write(`${p}/src/queue.h`, queueH),
      write(`${p}/src/queue.c`, queueC),
      write(`${p}/src/main.c`, queueMainC),
      write(`${p}/tests/test_queue.c`, testQueueC),
      write(`${p}/Makefile`, cmockaMakefile),
      bash("make run"),
      bash("make test || true"),
      edit(
        `${p}/src/queue.c`,
        "    q->tail->next = n;\n    q->tail = n;",
        "    if (q->tail)\n        q->tail->next = n;\n    else\n        q->head = n;\n    q->tail = n;",
      ),
      bash("make run"),
      bash("TEST_FILTER=push_then_pop_keeps_order make test"),
      bash("make test 2>&1 | tail -n 6"),
      edit(`${p}/src/queue.c`, "    q->head = n->next;\n", "    q->head = n->next;\n    if (q->head == NULL)\n        q->tail = NULL;\n    q->size--;\n"),
      bash("make test"),
    ],
  },
  {
    // ava through `npm test` (exit 1, two failures): a fix, then a
    // `test.only` on the fixed test makes `npm test` pass (1 test), the
    // .only removed, a --match subset piped into tail (exit 0), a --match
    // that matches nothing (exit 1), then all pass.
    name: "js-ava",
    goal: "`npm test` (ava) fails; fix src/bytes.js.",
    steps: (p) => [
      write(`${p}/package.json`, `{ "name": "units", "type": "module", "private": true, "scripts": { "test": "ava" } }\n`),
      write(`${p}/src/bytes.js`, bytesJs),
      write(`${p}/test/bytes.test.js`, bytesTestJs),
      bash("npm test"),
      edit(`${p}/src/bytes.js`, "while (n > 1024", "while (n >= 1024"),
      edit(`${p}/test/bytes.test.js`, 'test("formats exactly one kilobyte"', 'test.only("formats exactly one kilobyte"'),
      bash("npm test"),
      edit(`${p}/test/bytes.test.js`, 'test.only("formats exactly one kilobyte"', 'test("formats exactly one kilobyte"'),
      bash("npx ava --match 'parses*' 2>&1 | tail -n 15"),
      bash("npx ava --match '*gigabytes*'"),
      edit(`${p}/src/bytes.js`, "Number(m[1]) * 1000 **", "Number(m[1]) * 1024 **"),
      bash("npm test"),
    ],
  },
  {
    // cucumber-js through `npm test` (exit 1, two scenarios fail), a
    // --fail-fast run that stops at the first (exit 1, the rest skipped), a
    // fix, a --tags run that selects no scenario (exit 0), a one-scenario
    // run that passes, a piped tail over the other (exit 0), then all pass.
    name: "js-cucumber",
    goal: "`npm test` (cucumber-js) fails; fix src/basket.js.",
    steps: (p) => [
      write(`${p}/package.json`, `{ "name": "basket", "private": true, "scripts": { "test": "cucumber-js" } }\n`),
      write(`${p}/src/basket.js`, basketJs),
      write(`${p}/features/basket.feature`, basketFeature),
      write(`${p}/features/step_definitions/basket.steps.js`, basketStepsJs),
      bash("npm test"),
      bash("npx cucumber-js --fail-fast"),
      edit(`${p}/src/basket.js`, "sum + i.price, 0)", "sum + i.price * i.qty, 0)"),
      bash("npx cucumber-js --tags @quantities"),
      bash("npx cucumber-js features/basket.feature:8"),
      bash("npm test 2>&1 | tail -n 5"),
      edit(`${p}/src/basket.js`, "this.total() * this.discount;", "this.total() * (this.discount ?? 1);"),
      bash("npm test"),
    ],
  },
  {
    // ward: not on PATH (exit 127), then run from the tools venv with
    // --fail-limit 1 (stops after the first failure, exit 1), a wrapper
    // script piped into tail (exit 0), a --search subset that passes, then
    // background runs into ward.log read by tail: one failure, then pass.
    name: "python-ward",
    goal: "Run the ward tests and fix slugs/.",
    steps: (p) => [
      write(`${p}/slugs/__init__.py`, slugsPy),
      write(`${p}/tests/test_slugs.py`, testSlugsWardPy),
      bash("ward"),
      bash("export PATH=/tmp/tools/venv/bin:$PATH; ward --fail-limit 1"),
      write(`${p}/scripts/test.sh`, wardTestSh),
      bash("bash scripts/test.sh 2>&1 | tail -n 6"),
      edit(`${p}/slugs/__init__.py`, "    return slug\n", '    return slug.strip("-")\n'),
      bash("bash scripts/test.sh --search slugify"),
      bash("bash scripts/test.sh > ward.log 2>&1 &"),
      bash("sleep 2; tail -n 30 ward.log"),
      edit(`${p}/slugs/__init__.py`, "return slug[:limit]", 'return slug[:limit].rstrip("-")'),
      bash("bash scripts/test.sh > ward.log 2>&1 &"),
      bash("sleep 2; tail -n 30 ward.log"),
    ],
  },
  {
    // markdownlint through `npm run lint:md` (exit 1): a --fix run that
    // fixes README.md and leaves two errors in docs/ (exit 1), a one-file
    // run that passes, an `|| true` run (exit 0), hand fixes, then clean.
    name: "docs-markdownlint",
    goal: "`npm run lint:md` fails; fix the Markdown.",
    steps: (p) => [
      write(`${p}/package.json`, `{ "name": "handbook", "private": true, "scripts": { "lint:md": "markdownlint README.md docs/" } }\n`),
      write(`${p}/README.md`, handbookReadme),
      write(`${p}/docs/release.md`, releaseMd),
      bash("npm run lint:md"),
      bash("npx markdownlint --fix README.md docs/"),
      bash("npx markdownlint README.md"),
      bash("npx markdownlint docs/ || true"),
      edit(`${p}/docs/release.md`, "### Tagging", "## Tagging"),
      edit(`${p}/docs/release.md`, "# Rollback", "## Rollback"),
      bash("npm run lint:md"),
    ],
  },
  {
    // yamllint --strict through `make lint` (make exits 2): two files, a
    // fix and a one-file run that passes, a -d relaxed run with
    // `; echo "exit: $?"` (exit 0, prints exit: 1), a piped tail (exit 0),
    // then clean.
    name: "yaml-yamllint",
    goal: "`make lint` fails; fix the YAML in config/.",
    steps: (p) => [
      write(`${p}/.yamllint`, yamllintConfig),
      write(`${p}/config/app.yml`, appYml),
      write(`${p}/config/jobs.yml`, jobsYml),
      write(`${p}/Makefile`, ".PHONY: lint\nlint:\n\tyamllint --strict config/\n"),
      bash("export PATH=/tmp/tools/venv/bin:$PATH; make lint"),
      edit(`${p}/config/jobs.yml`, '"0 4 * * 0"   \n', '"0 4 * * 0"\n'),
      edit(`${p}/config/jobs.yml`, "enabled: yes", "enabled: true"),
      bash("/tmp/tools/venv/bin/yamllint --strict config/jobs.yml"),
      bash('/tmp/tools/venv/bin/yamllint -d relaxed config/app.yml; echo "exit: $?"'),
      bash("export PATH=/tmp/tools/venv/bin:$PATH; make lint 2>&1 | tail -n 4"),
      write(`${p}/config/app.yml`, appFixedYml),
      bash("export PATH=/tmp/tools/venv/bin:$PATH; make lint"),
    ],
  },
  {
    // shunit2 through `make test` (exit 2, ANSI colours, two failed
    // asserts), a subset of two named tests that passes, a `; echo "exit:
    // $?"` run (exit 0), then all pass.
    name: "shell-shunit2",
    goal: "`make test` (shunit2) fails; fix lib/paths.sh.",
    steps: (p) => [
      write(`${p}/lib/paths.sh`, pathsSh),
      write(`${p}/tests/test_paths.sh`, testPathsSh),
      write(`${p}/Makefile`, ".PHONY: test\ntest:\n\tbash tests/test_paths.sh\n"),
      bash("make test"),
      edit(`${p}/lib/paths.sh`, '"${1#*.}"', '"${1##*.}"'),
      bash("bash tests/test_paths.sh -- testExtOfDottedName testExtOfPlainName"),
      bash('make test; echo "exit: $?"'),
      edit(`${p}/lib/paths.sh`, `printf '%s/%s\\n' "$1" "$2"`, `printf '%s/%s\\n' "\${1%/}" "$2"`),
      bash("make test"),
    ],
  },
];
