"""What the scripts/compare-* scripts that run a redline tool beside PyTorch share: flag checks that exit 2
naming the flag, a failed tool's status, the per-round ratio statistics, and finding and naming the cuDNN
that torch runs. Imported by the scripts next to it; not a program.
"""
import argparse
import glob
import json
import math
import os
import re
import statistics
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


def number(value):
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratios(ours, theirs):
    """Per-round ratios of the rounds where both sides have a figure: (median, lowest, highest, count)."""
    per_round = [a / b for a, b in zip(ours, theirs) if a is not None and b]
    if not per_round:
        return None
    return statistics.median(per_round), min(per_round), max(per_round), len(per_round)


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
