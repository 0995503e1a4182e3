#!/usr/bin/env python3
"""Every column the code writes by a literal name is declared by some tool.

The runtime check (write_reports under REDLINE_STRICT_SCHEMA=1) catches what
the tests run; this one reads the source, so the GPU paths, which cannot run
here, are held to their declarations too. A row's parameters are written by
`.param("name", ...)`, its metrics by `.metric("name", ...)` and the case
runner's `.counter("name", ...)`; the names are checked against
results/SCHEMA.md's parameters and metrics tables (which another test holds to
the declarations).
"""
import os
import re
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ("bench", "collectives", "harness", "kernels")
SOURCE_SUFFIXES = (".cpp", ".hpp", ".cu", ".cuh")
WRITE = re.compile(r'\.(param|metric|counter)\(\s*"([A-Za-z_][A-Za-z0-9_]*)"')


def written_columns():
    """{(kind, name): first place} for every literal column the code writes."""
    found = {}
    for folder in FOLDERS:
        for base, _, files in os.walk(os.path.join(ROOT, folder)):
            for file in sorted(files):
                if not file.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(base, file)
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        for call, name in WRITE.findall(line):
                            kind = "parameter" if call == "param" else "metric"
                            found.setdefault((kind, name), f"{os.path.relpath(path, ROOT)}:{number}")
    return found


def table_rows(text, heading):
    section = text.split("\n" + heading + "\n", 1)[1]
    rows = []
    for line in section.splitlines():
        if line.startswith("## "):
            break
        if line.startswith("| `"):
            rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def declared_columns():
    with open(os.path.join(ROOT, "results", "SCHEMA.md"), encoding="utf-8") as f:
        text = f.read()
    metrics = {row[0].strip("`") for row in table_rows(text, "## Metrics")}
    parameters = {row[1].strip("`") for row in table_rows(text, "## Parameters")}
    return metrics, parameters


def is_declared(kind, name, metrics, parameters):
    if kind == "parameter":
        return name in parameters
    return name in metrics or any(p.startswith("*") and name.endswith(p[1:]) and name != p[1:] for p in metrics)


class DeclaredColumns(unittest.TestCase):
    def test_every_written_column_is_declared(self):
        metrics, parameters = declared_columns()
        self.assertIn("busbw_GBps", metrics)  # the tables are read, not empty
        self.assertIn("batch_size", parameters)
        written = written_columns()
        self.assertIn(("metric", "busbw_GBps"), written)  # the source is read too
        problems = [f"{place}: {kind} {name} is declared by no tool"
                    for (kind, name), place in sorted(written.items(), key=lambda item: item[1])
                    if not is_declared(kind, name, metrics, parameters)]
        self.assertEqual(problems, [], "\n".join(problems))

    def test_patterns_match_only_with_a_prefix(self):
        self.assertTrue(is_declared("metric", "tokens_per_s", {"*_per_s"}, set()))
        self.assertFalse(is_declared("metric", "_per_s", {"*_per_s"}, set()))
        self.assertFalse(is_declared("parameter", "tokens_per_s", {"*_per_s"}, set()))


if __name__ == "__main__":
    sys.exit(unittest.main(verbosity=2))
