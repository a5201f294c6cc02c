// The sessions of the HUD quality evaluation, as scripts of tool calls. The
// real tools run them when eval/capture.ts drives the real OpenCode.

import type { ToolStep } from "../test/fake-model.ts";

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
];
