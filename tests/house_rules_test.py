#!/usr/bin/env python3
"""The house rules of docs/DESIGN.md, checked on the source tree.

- Dependencies point one way: bench -> {kernels, collectives} -> harness;
  collectives may use kernels' CUDA helpers, never the reverse.
- Inside harness/, rooms include down only: core at the bottom; measure,
  report and gpu (what every GPU tool's model shares) on core, never on each
  other; the tool rooms and tracking on those, never on each other.
- harness/ includes no CUDA, NCCL or MPI header, so all of it is tested
  without a GPU.
- No room below bench/ names a tool: tools declare what their rows mean
  through the schema and pass their own name.
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
    # redline is the front end; its name is also the JSON context key.
    return sorted(set(re.findall(r"add_executable\((\w+)", text)) - {"mpi_allreduce_loop", "redline"})


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
        pattern = re.compile(r'"(' + "|".join(map(re.escape, names)) + r')"')
        problems = []
        for folder in ("harness", "kernels", "collectives"):
            for path in sources(folder):
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        if pattern.search(line):
                            problems.append(f"{rel(path)}:{number}: {line.strip()}")
        self.assertEqual(problems, [], "\n".join(problems))

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
