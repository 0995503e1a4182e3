#!/usr/bin/env python3
"""The statistics behind scripts/compare-allreduce's verdict: the confidence
interval for a median ratio, what it says about a target, and the report
that states it.

The script is a program, not a module, so it is loaded from its file."""
import importlib.machinery
import importlib.util
import math
import os
import random
import sys
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts", "compare-allreduce")
loader = importlib.machinery.SourceFileLoader("compare_allreduce", SCRIPT)
spec = importlib.util.spec_from_loader("compare_allreduce", loader)
compare = importlib.util.module_from_spec(spec)
loader.exec_module(compare)


def coverage(n, k):
    """The chance that [k-th smallest, k-th largest] of n draws holds the median: 1 - 2 P(Binomial(n, 1/2) < k)."""
    return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n


class MedianIntervalTest(unittest.TestCase):
    def test_six_rounds_give_the_extremes_and_five_give_none(self):
        # Six: [min, max] holds the median with 1 - 2/64 = 96.9%; five reach only 93.8%.
        self.assertEqual(compare.median_interval([1.04, 0.97, 1.01, 0.99, 1.10, 1.00]), (0.97, 1.10))
        self.assertIsNone(compare.median_interval([1.0, 1.0, 1.0, 1.0, 1.0]))
        self.assertIsNone(compare.median_interval([1.0]))

    def test_twenty_rounds_give_the_sixth_from_each_end(self):
        # P(B <= 5) = 2.07% keeps 95.9% coverage; P(B <= 6) = 5.77% would not.
        values = [float(v) for v in range(20)]
        random.Random(7).shuffle(values)
        self.assertEqual(compare.median_interval(values), (5.0, 14.0))

    def test_the_chosen_interval_is_the_narrowest_with_the_coverage(self):
        for n in range(6, 80):
            low, high = compare.median_interval(list(range(n)))
            k = low + 1
            self.assertEqual(high, n - k, n)
            self.assertGreaterEqual(coverage(n, k), 0.95, n)
            self.assertLess(coverage(n, k + 1), 0.95, n)

    def test_it_holds_the_true_median_about_as_often_as_it_says(self):
        # Lognormal ratios around 1.02: skewed, as timing ratios are.
        rng, held, trials = random.Random(11), 0, 2000
        for _ in range(trials):
            low, high = compare.median_interval([1.02 * math.exp(rng.gauss(0, 0.1)) for _ in range(12)])
            held += low <= 1.02 <= high
        self.assertGreater(held / trials, 0.95)
        self.assertLess(held / trials, 0.995)


class JudgeTest(unittest.TestCase):
    def test_within_only_when_the_whole_interval_is(self):
        self.assertEqual(compare.judge((0.96, 1.04), 0.05), "within")
        self.assertEqual(compare.judge((0.95, 1.05), 0.05), "within")
        self.assertEqual(compare.judge((0.96, 1.06), 0.05), "not resolved")
        self.assertEqual(compare.judge((0.90, 1.10), 0.05), "not resolved")

    def test_outside_on_either_side(self):
        # Reading higher than the peer is as much a miss as reading lower.
        self.assertEqual(compare.judge((1.06, 1.30), 0.05), "outside")
        self.assertEqual(compare.judge((0.80, 0.94), 0.05), "outside")
        self.assertEqual(compare.judge((0.97, 0.979), 0.02), "outside")

    def test_no_interval_resolves_nothing(self):
        self.assertEqual(compare.judge(None, 0.05), "not resolved")


def rounds_of(ratios_by_size, peer_bw=10.0):
    """runs for report(): per round, the peer at peer_bw and redline at ratio x peer_bw, size by size."""
    count = len(next(iter(ratios_by_size.values())))
    return {"redline": [{b: peer_bw * r[i] for b, r in ratios_by_size.items()} for i in range(count)],
            "peer": [{b: peer_bw for b in ratios_by_size} for _ in range(count)]}


MIB = 1 << 20


class ReportTest(unittest.TestCase):
    def verdict(self, lines):
        return next(line for line in lines if line.startswith("target, 95% confidence per size: "))

    def test_shown_when_every_interval_lies_inside(self):
        runs = rounds_of({MIB: [1.01, 0.99, 1.02, 0.98, 1.00, 1.03], 2 * MIB: [0.97] * 6})
        lines = report(runs)
        self.assertIn("shown: within 5% at every size from 1 MiB", self.verdict(lines))
        self.assertRegex(lines[1], r"^ +1048576 +10\.050 +10\.000 +1\.005 +0\.980-1\.030 +within$")

    def test_missed_names_the_sizes_wholly_outside_and_reading_higher_counts(self):
        runs = rounds_of({MIB: [1.0] * 6, 2 * MIB: [1.10, 1.20, 1.08, 1.12, 1.30, 1.07], 4 * MIB: [0.9, 1.1] * 3})
        self.assertIn("MISSED: outside 5% at 2097152 bytes", self.verdict(report(runs)))

    def test_a_straddling_interval_is_not_resolved(self):
        runs = rounds_of({MIB: [1.0] * 6, 2 * MIB: [0.90, 1.0, 1.01, 0.99, 1.02, 1.0]})
        self.assertIn("not shown either way: the interval reaches past 1 +- 5% at 2097152 bytes",
                      self.verdict(report(runs)))

    def test_too_few_rounds_resolve_nothing_even_far_off(self):
        runs = rounds_of({MIB: [1.5] * 5})
        self.assertIn("not shown either way: 5 rounds give no 95% interval (6 do)", self.verdict(report(runs)))

    def test_sizes_below_one_mib_are_shown_but_not_judged(self):
        runs = rounds_of({MIB // 2: [2.0] * 6, MIB: [1.0] * 6})
        lines = report(runs)
        self.assertRegex(lines[1], r"^ +524288 .* outside$")
        self.assertIn("shown: within 5%", self.verdict(lines))

    def test_a_control_that_leaves_out_one_warns(self):
        # Eight rounds: enough for intervals that hold at 95% for all three sizes together.
        runs = rounds_of({MIB: [1.0] * 8, 2 * MIB: [1.0] * 8, 4 * MIB: [1.0] * 8})
        runs["peer again"] = [{MIB: 10.0 * (1 + 0.01 * (i % 2)), 2 * MIB: 11.0, 4 * MIB: 9.0} for i in range(8)]
        lines = report(runs)
        self.assertIn("control: the peer against itself reads 0.900 to 1.100", lines)
        self.assertEqual(lines[-1].split(" bytes")[0], "WARNING: the peer differs from itself at 2097152, 4194304")

    def test_one_size_in_many_leaving_out_one_by_chance_does_not_warn(self):
        # Seven sizes, 24 rounds: at 1 MiB the control's 95% interval (7th to
        # 18th of 24) leaves out 1, but the interval that holds for all seven
        # sizes together (6th to 19th) does not.
        sizes = [MIB << i for i in range(7)]
        runs = rounds_of({b: [1.0] * 24 for b in sizes})
        at_one_mib = [0.95, 0.96, 0.97, 0.98, 0.985, 0.99] + [1.01 + 0.01 * i for i in range(18)]
        runs["peer again"] = [{b: 10.0 * (at_one_mib[i] if b == MIB else 1.0) for b in sizes} for i in range(24)]
        lines = report(runs)
        self.assertRegex(lines[1], r" 1\.0[0-9]{2} +1\.010-1\.120$")
        self.assertFalse(any("WARNING" in line for line in lines), lines)
        # One more round below 1 gone, and it is more than chance.
        at_one_mib[5] = 1.005
        runs["peer again"] = [{b: 10.0 * (at_one_mib[i] if b == MIB else 1.0) for b in sizes} for i in range(24)]
        self.assertTrue(report(runs)[-1].startswith("WARNING: the peer differs from itself at 1048576 bytes"))

    def test_a_control_that_holds_one_does_not_warn(self):
        runs = rounds_of({MIB: [1.0] * 6})
        runs["peer again"] = [{MIB: 10.0 * (0.95 + 0.02 * i)} for i in range(6)]
        self.assertFalse(any("WARNING" in line for line in report(runs)))


def report(runs):
    return compare.report(runs, "MPI_Allreduce loop", 0.05)


if __name__ == "__main__":
    sys.exit(unittest.main())
