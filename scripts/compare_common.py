"""What the scripts/compare-* scripts share: flag checks that exit 2 naming the flag, running a redline tool
(its JSON read back, its failure turned into an exit status), the per-round ratio statistics and their
confidence interval, the verdict against a target, the CSV, the main() skeleton, and finding and naming the
cuDNN that torch runs. Imported by the scripts next to it; not a program.
"""
import argparse
import csv
import glob
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys

class Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own complaints (an unknown flag, a missing value): exit 2, named
        self.print_usage(sys.stderr)
        print(f"{self.prog}: {message}", file=sys.stderr)
        sys.exit(2)


class FlagError(Exception):
    """A bad flag value; printed as "PROG: --flag 'value': reason"."""

    def __init__(self, flag, value, reason):
        super().__init__(f"{flag} '{value}': {reason}")


def whole(flag, text, least, most):
    try:
        value = int(text, 10)
    except ValueError:
        raise FlagError(flag, text, "not a whole number") from None
    if not least <= value <= most:
        raise FlagError(flag, text, f"must be between {least} and {most}")
    return value


class BenchFailed(Exception):
    """A tool that did not run: the message to print and the exit status (77: cannot run here)."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


def main_of(prog, parse_flags, compare, argv):
    """The skeleton of every script's main(): flags, then the comparison; a bad flag exits 2 with
    "PROG: --flag 'value': reason", a tool that did not run with its own status."""
    try:
        parsed = parse_flags(argv)
    except FlagError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    except BenchFailed as e:
        print(e, file=sys.stderr)
        return e.status
    try:
        return compare(parsed)
    except BenchFailed as e:
        print(e, file=sys.stderr)
        return e.status


def import_torch(prog):
    """torch, where it is installed and sees a GPU; else BenchFailed(77) saying which is missing."""
    try:
        import torch
    except (ImportError, OSError) as e:
        raise BenchFailed(f"{prog}: skipped: PyTorch is not installed here"
                          + ("" if isinstance(e, ImportError) else f": {e}"), 77) from None
    if not torch.cuda.is_available():
        raise BenchFailed(f"{prog}: skipped: PyTorch sees no GPU", 77)
    return torch


# ---- flags ----------------------------------------------------------------------------------------------------

def tool_path(build, tool):
    return os.path.join(build, "bench", tool)


def require_tools(build, *tools):
    """--build must hold every tool the script runs."""
    for tool in tools:
        path = tool_path(build, tool)
        if not os.path.isfile(path) or not os.access(path, os.X_OK):
            raise FlagError("--build", build, f"holds no bench/{tool} (build it first)")


def check_csv_path(path):
    """--csv FILE: a file name in a folder that exists (None: no CSV asked for)."""
    if path is None:
        return
    if not path or os.path.isdir(path):
        raise FlagError("--csv", path, "not a file name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FlagError("--csv", path, f"no folder {folder}")


# ---- running a tool -------------------------------------------------------------------------------------------

def tool_env(build, first=None):
    """The environment a tool runs in: LD_LIBRARY_PATH with `first` (torch's cuDNN folder, so both sides load one
    library), then <build>/runtime-libs (a build made on another machine brings its Google Benchmark library along,
    see scripts/gpu-check), then what was there."""
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (first, os.path.join(os.path.abspath(build), "runtime-libs"), env.get("LD_LIBRARY_PATH")) if p)
    return env


def run_command(cmd, timeout=3600, env=None):
    """(exit status, stdout, stderr) of cmd. It runs in a process group of its own, so a timeout or an interrupt
    stops a launcher and every rank it started; a timeout raises BenchFailed (1)."""
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True, env=env)
    try:
        out, err = child.communicate(timeout=timeout)
    except (subprocess.TimeoutExpired, KeyboardInterrupt) as stop:
        stop_group(child)
        if isinstance(stop, KeyboardInterrupt):
            raise
        raise BenchFailed(f"{' '.join(cmd)} ran past {timeout} s", 1) from None
    return child.returncode, out, err


def stop_group(child):
    for signal_, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, None)):
        try:
            os.killpg(child.pid, signal_)
            child.wait(timeout=grace)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


def run_tool(prog, build, tool, args, json_path, env=None, accept=(0,), timeout=3600, json_required=True,
             program=None):
    """(JSON report, stdout) of `build/bench/tool args --json json_path --quiet [-- program...]` (`program`: the
    command a tool such as `redline profile` runs, after its own flags). Raises BenchFailed: 77 where the tool
    cannot run here, 2 (its message) where it refused a flag, 1 where it exited otherwise outside `accept`, ran
    past `timeout` or wrote no JSON (unless not `json_required`: then the report is None)."""
    cmd = [tool_path(build, tool)] + list(args) + ["--json", json_path, "--quiet"]
    if program:
        cmd += ["--"] + list(program)
    if os.path.exists(json_path):
        os.remove(json_path)  # a run that writes none must not be read as the last one's
    try:
        status, out, err = run_command(cmd, timeout, env)
    except BenchFailed as e:
        raise BenchFailed(f"{prog}: {e}", e.status) from None
    if status == 77:
        raise BenchFailed(f"{prog}: skipped: {tool} cannot run here: {err.strip()}", 77)
    if status == 2:
        raise BenchFailed(f"{prog}: {err.strip() or ' '.join(cmd) + ' refused its flags'}", 2)
    if status not in accept or (json_required and not os.path.exists(json_path)):
        raise BenchFailed(f"{prog}: {' '.join(cmd)} exited {status}:\n{err}", 1)
    return read_json(json_path), out


def read_json(path):
    """The JSON report at path; None where there is none or it does not parse."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def report_rows(report):
    """The rows (Google Benchmark's "benchmarks") of a redline tool's JSON report."""
    return [b for b in (report or {}).get("benchmarks", []) if isinstance(b, dict)]


def report_summary(report):
    """The summary lines of a redline tool's JSON report, name -> text."""
    return ((report or {}).get("context", {}).get("redline", {}) or {}).get("summary", {}) or {}


def named_numbers(text):
    """'hidden 4096, rope_theta 500000, norm_eps 1e-05' -> {'hidden': 4096.0, ...}: a summary line's pairs."""
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"(\w+) ([-+]?\d[\d.]*(?:e[-+]?\d+)?)\b", text or "")}


def number(value):
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


# ---- ratios, intervals, verdicts -------------------------------------------------------------------------------

def ratios(ours, theirs):
    """Per-round ratios of the rounds where both sides have a figure: (median, lowest, highest, count)."""
    per_round = [a / b for a, b in zip(ours, theirs) if a is not None and b]
    if not per_round:
        return None
    return statistics.median(per_round), min(per_round), max(per_round), len(per_round)


def rounds_text(n):
    return f"{n} round{'s' if n != 1 else ''}"


def ratio_text(ratio):
    """'1.234x (spread 1.100-1.300 over 3 rounds)' of ratios()' tuple."""
    mid, low, high, n = ratio
    return f"{mid:.3f}x (spread {low:.3f}-{high:.3f} over {rounds_text(n)})"


def ratio_cells(ratio, prefix="ratio"):
    """The CSV cells of ratios()' tuple: prefix, prefix_min, prefix_max (empty where there is no ratio)."""
    if ratio is None:
        return {prefix: "", f"{prefix}_min": "", f"{prefix}_max": ""}
    mid, low, high, _ = ratio
    return {prefix: f"{mid:.4f}", f"{prefix}_min": f"{low:.4f}", f"{prefix}_max": f"{high:.4f}"}


def verdict_of(ratio, target):
    """A median ratio against `at least target`, and whether every round agreed."""
    mid, low, high, _ = ratio
    if mid >= target:
        return "met" + (" (every round)" if low >= target else f" (not every round: lowest {low:.3f}x)")
    return "missed" + (f" (some rounds met it: highest {high:.3f}x)" if high >= target else "")


def band_verdict(ratio, tolerance):
    """A median ratio against 1 +- tolerance (two figures that should agree), and whether every round's did."""
    mid, low, high, _ = ratio

    def inside(x):
        return abs(x - 1) <= tolerance + 1e-12  # 1.05 - 1 is a hair over 0.05 in binary

    if inside(mid):
        return "met" + (" (every round)" if inside(low) and inside(high) else
                        f" (not every round: {low:.3f}x-{high:.3f}x)")
    reaches = low <= 1 + tolerance and high >= 1 - tolerance
    return "missed" + (f" (the rounds' spread {low:.3f}x-{high:.3f}x reaches the band)" if reaches else "")


def median_interval(values, confidence=0.95):
    """(low, high): a distribution-free confidence interval for the median of values, or None when too few.

    The median lies below the k-th smallest of n values with the chance that
    a Binomial(n, 1/2) count is below k; [k-th smallest, k-th largest] thus
    holds it with 1 - 2 P(B <= k-1). The widest k that keeps that at
    `confidence` or more gives the narrowest such interval."""
    n, ordered = len(values), sorted(values)
    chosen, below = None, 0.0
    for k in range(1, n // 2 + 1):
        below += math.comb(n, k - 1) / 2 ** n
        if 1 - 2 * below < confidence:
            break
        chosen = k
    return None if chosen is None else (ordered[chosen - 1], ordered[n - chosen])


def rounds_needed(confidence):
    """The fewest rounds whose extremes already hold the median at `confidence`: 1 - 2 / 2^n >= it."""
    return next(n for n in range(1, 200) if median_interval([0.0] * n, confidence) is not None)


def judge(interval, target):
    """'within' if the whole interval lies inside 1 +- target, 'outside' if wholly outside, else 'not resolved'."""
    if interval is None:
        return "not resolved"
    low, high = interval
    if 1 - target <= low and high <= 1 + target:
        return "within"
    if high < 1 - target or low > 1 + target:
        return "outside"
    return "not resolved"


# ---- output ---------------------------------------------------------------------------------------------------

def write_csv(path, rows, header=None):
    """rows: dicts (the header is the first row's keys) or, with `header`, lists."""
    with open(path, "w", newline="") as f:
        if header is None:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
        else:
            w = csv.writer(f)
            w.writerow(header)
        w.writerows(rows)


def first_line(error):
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def cudnn_version_text(value):
    """91901 -> '9.19.1 (91901)', 8902 -> '8.9.2 (8902)'; a string as it is; None -> 'unknown'."""
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)) or (isinstance(value, str) and value.isdigit()):
        v = int(value)
        if v >= 10000:
            return f"{v // 10000}.{v % 10000 // 100}.{v % 100} ({v})"
        if v >= 1000:
            return f"{v // 1000}.{v % 1000 // 100}.{v % 100} ({v})"
        return str(v)
    return str(value)


# CudnnAttention::version() after "cuDNN ", as redline's tools print it in a summary line or a row's note.
CUDNN_IN_TEXT = re.compile(r"cuDNN (\d+\.\d+\.\d+(?: \(frontend \d+\.\d+\.\d+\))?)")


def bench_cudnn_version(report):
    """The cuDNN version a redline tool's JSON report names ('9.19.0 (frontend 1.32.0)'); None where it names none
    (a build without cuDNN, or no cuDNN case ran)."""
    m = CUDNN_IN_TEXT.search(json.dumps(report or {}))
    return m.group(1) if m else None


def torch_cudnn_version(torch):
    """torch's cuDNN version as text. Raises BenchFailed (77) where torch cannot load its cuDNN (a libcudnn older
    than the one torch was built with, found first on LD_LIBRARY_PATH): its cuDNN backend could not run either."""
    try:
        return cudnn_version_text(torch.backends.cudnn.version())
    except RuntimeError as e:
        raise BenchFailed(f"skipped: torch cannot load its cuDNN: {first_line(e)}", 77) from None


def version_core(text):
    """'9.19.1' out of '9.19.1 (91901)' or '9.19.1 (frontend 1.19.0)': the part both sides' texts share."""
    m = re.match(r"\s*(\d+\.\d+(?:\.\d+)?)", text)
    return m.group(1) if m else text


def torch_cudnn_dir(torch):
    """The folder of the libcudnn torch has loaded, else of the one its wheels bring; None if none is found."""
    try:
        torch.backends.cudnn.version()  # loads libcudnn
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if line.strip() else ""
                if os.path.basename(path).startswith("libcudnn.so"):
                    return os.path.dirname(os.path.realpath(path))
    except (OSError, RuntimeError):
        pass
    candidates = []
    try:
        import nvidia.cudnn
        candidates += [os.path.join(p, "lib") for p in nvidia.cudnn.__path__]
    except ImportError:
        pass
    site = os.path.dirname(os.path.dirname(torch.__file__))
    candidates += sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib")))
    candidates.append(os.path.join(os.path.dirname(torch.__file__), "lib"))
    for folder in candidates:
        if glob.glob(os.path.join(folder, "libcudnn.so*")):
            return folder
    return None
