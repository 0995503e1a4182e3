#!/usr/bin/env python3
"""The house rules of docs/DESIGN.md, checked on the source tree.

- Dependencies point one way: bench -> {kernels, collectives} -> harness;
  collectives may use kernels' CUDA helpers, never the reverse.
- Inside harness/, rooms include down only: core at the bottom; measure,
  report and gpu (what every GPU tool's model shares) on core, never on each
  other; the tool rooms and tracking on those, never on each other.
- harness/ includes no CUDA, NCCL or MPI header, so all of it is tested
  without a GPU.
- No room below bench/ names a tool, in code or in comments: tools declare
  what their rows mean through the schema and pass their own name, and a
  comment that says which tool uses a thing is that knowledge too (it goes
  stale when the tool is renamed or split). Paths under harness/ and docs/
  are exempt: a room's own file (harness/batch/batch_sweep.hpp) is named for
  what it holds, and a docs page is cited where its rule is written down.
  `redline` is not checked: it is the project's name and namespace, and
  tracking/ and plan/ are the pure logic of the redline front end itself.
- No bench/ file is over 600 lines.
"""
import os
import re
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_SUFFIXES = (".cpp", ".hpp", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)

# Which harness rooms each room may include (itself always).
FLOORS = {
    "core": set(),
    "measure": {"core"},
    "report": {"core"},
    "gpu": {"core"},
}
UPPER_ROOMS_MAY_USE = {"core", "measure", "report", "gpu"}
FORBIDDEN_IN_HARNESS = re.compile(r"^(cuda|cu[a-z]+_|cublas|cudnn|cupti|nvtx|nccl|mpi)[^/]*\.h|^nvtx3/|^cudnn_frontend")


def sources(folder):
    for base, _, files in os.walk(os.path.join(ROOT, folder)):
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.join(base, name)


def includes(path):
    with open(path, encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def rel(path):
    return os.path.relpath(path, ROOT)


def tool_names():
    with open(os.path.join(ROOT, "bench", "CMakeLists.txt"), encoding="utf-8") as f:
        text = f.read()
    # redline is the front end; its name is also the project's, the
    # namespace's and the JSON context key, so it cannot be told apart.
    return sorted(set(re.findall(r"add_executable\((\w+)", text)) - {"redline"})


TOOL_FREE_PATHS = re.compile(r"\b(?:harness|docs)/[\w./-]+")


def names_a_tool(line, names):
    """The tool names in `line` as whole words, outside paths under harness/ and docs/."""
    if INCLUDE.match(line):
        return []
    return re.findall(r"\b(" + "|".join(map(re.escape, names)) + r")\b", TOOL_FREE_PATHS.sub("", line))


def tool_mentions(names):
    """(path, line number, line) of every line below bench/ that names a tool."""
    for folder in ("harness", "kernels", "collectives"):
        for path in sources(folder):
            with open(path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    if names_a_tool(line, names):
                        yield path, number, line.strip()


class HouseRules(unittest.TestCase):
    def test_harness_rooms_include_down_only(self):
        problems = []
        for path in sources("harness"):
            room = rel(path).split(os.sep)[1]
            allowed = FLOORS.get(room, UPPER_ROOMS_MAY_USE) | {room}
            for kind, header in includes(path):
                if header.startswith(("kernels/", "collectives/", "bench/")):
                    problems.append(f"{rel(path)} includes {header}: harness/ is below every other folder")
                elif header.startswith("harness/"):
                    other = header.split("/")[1]
                    if other not in allowed:
                        problems.append(f"{rel(path)} (room {room}) includes {header}")
                elif FORBIDDEN_IN_HARNESS.search(header):
                    problems.append(f"{rel(path)} includes <{header}>: harness/ is pure C++")
        self.assertEqual(problems, [], "\n".join(problems))

    def test_harness_files_live_in_rooms(self):
        loose = [name for name in os.listdir(os.path.join(ROOT, "harness")) if name.endswith(SOURCE_SUFFIXES)]
        self.assertEqual(loose, [], "harness/ files outside a room")

    def test_lower_folders_do_not_reach_up(self):
        rules = {"kernels": ("collectives/", "bench/"), "collectives": ("bench/",)}
        problems = []
        for folder, banned in rules.items():
            for path in sources(folder):
                for _, header in includes(path):
                    if header.startswith(banned):
                        problems.append(f"{rel(path)} includes {header}")
        self.assertEqual(problems, [], "\n".join(problems))

    def test_no_room_names_a_tool(self):
        names = tool_names()
        self.assertIn("allreduce_bench", names)  # the list is read, not empty
        problems = [f"{rel(path)}:{number}: {line}" for path, number, line in tool_mentions(names)]
        self.assertEqual(problems, [], "\n".join(problems))

    def test_tool_mentions_are_found_anywhere_on_a_line(self):
        names = ["batch_sweep", "gemm_bench"]
        found = lambda line: bool(names_a_tool(line, names))
        self.assertTrue(found('throw UsageError("use batch_sweep [OPTIONS]");'))
        self.assertTrue(found("// A load for gemm_bench's GEMM"))
        self.assertTrue(found('return "GEMMs (gemm_bench\'s GEMM)";'))
        self.assertTrue(found("// bench/batch_sweep.cpp only parses flags"))
        self.assertFalse(found('#include "harness/batch/batch_sweep.hpp"'))
        self.assertFalse(found("// The rule: docs/batch_sweep.md, section 2"))
        self.assertFalse(found("BatchSweepOutcome run_batch_sweep(std::string tool);"))
        self.assertFalse(found("// a batch sweep and a gemm bench"))

    def test_bench_files_stay_small(self):
        problems = []
        for path in sources("bench"):
            with open(path, encoding="utf-8") as f:
                count = sum(1 for _ in f)
            if count > 600:
                problems.append(f"{rel(path)}: {count} lines")
        self.assertEqual(problems, [], "\n".join(problems))


if __name__ == "__main__":
    sys.exit(unittest.main(verbosity=2))
