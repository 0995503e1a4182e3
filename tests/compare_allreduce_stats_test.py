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
        return next(line for line in lines if line.startswith("target: "))

    def test_shown_when_every_interval_lies_inside(self):
        # Two sizes: each interval at 97.5%, which 6 rounds (96.9%) miss and 8 reach.
        runs = rounds_of({MIB: [1.01, 0.99, 1.02, 0.98, 1.00, 1.03, 1.0, 1.0], 2 * MIB: [0.97] * 8})
        lines = report(runs)
        self.assertEqual(self.verdict(lines), "target: shown: within 5% at every size from 1 MiB")
        self.assertRegex(lines[1], r"^ +1048576 +10\.000 +10\.000 +1\.000 +0\.980-1\.030 +within$")
        self.assertIn("intervals: all 2 together at 95% (each at 97.50%); ratios are redline / MPI_Allreduce loop",
                      lines)

    def test_intervals_print_rounded_outward(self):
        # 0.9497 is below 0.95: printed as 0.950 it would look within 5% while judged not.
        runs = rounds_of({MIB: [0.9497, 1.0, 1.0, 1.0, 1.0, 1.0301]})
        lines = report(runs)
        self.assertRegex(lines[1], r" 0\.949-1\.031 +not resolved$")
        runs = rounds_of({MIB: [0.95, 1.0, 1.0, 1.0, 1.0, 1.03]})
        self.assertRegex(report(runs)[1], r" 0\.950-1\.030 +within$")
        # Ratios of 0.903 and 0.948 come back from 9.03 / 10 and 9.48 / 10 a
        # hair above: still 0.903 and 0.948, not widened to 0.949.
        runs = rounds_of({MIB: [0.903, 0.91, 0.92, 0.93, 0.94, 0.948]})
        self.assertRegex(report(runs)[1], r" 0\.903-0\.948 +outside$")

    def test_missed_names_the_sizes_wholly_outside_and_reading_higher_counts(self):
        runs = rounds_of({MIB: [1.0] * 8, 2 * MIB: [1.10, 1.20, 1.08, 1.12, 1.30, 1.07, 1.1, 1.1],
                          4 * MIB: [0.9, 1.1] * 4})
        self.assertEqual(self.verdict(report(runs)), "target: MISSED: outside 5% at 2097152 bytes")

    def test_a_straddling_interval_is_not_resolved(self):
        runs = rounds_of({MIB: [1.0] * 8, 2 * MIB: [0.90, 1.0, 1.01, 0.99, 1.02, 1.0, 1.0, 1.0]})
        self.assertIn("not shown either way: the interval reaches past 1 +- 5% at 2097152 bytes",
                      self.verdict(report(runs)))

    def test_too_few_rounds_for_the_sizes_together_resolve_nothing_even_far_off(self):
        # Six rounds hold one size at 96.9%, but not seven sizes together (each at 99.29%: 9 rounds).
        one = rounds_of({MIB: [1.5] * 6})
        self.assertEqual(self.verdict(report(one)), "target: MISSED: outside 5% at 1048576 bytes")
        seven = rounds_of({MIB << i: [1.5] * 6 for i in range(7)})
        lines = report(seven)
        self.assertEqual(self.verdict(lines),
                         "target: not shown either way: 6 rounds give no interval for 7 sizes together (9 do)")
        self.assertRegex(lines[1], r" +- +not resolved$")

    def test_sizes_below_one_mib_are_shown_but_not_judged(self):
        runs = rounds_of({MIB // 2: [2.0] * 8, MIB: [1.0] * 8})
        lines = report(runs)
        self.assertRegex(lines[1], r"^ +524288 .* outside$")
        self.assertIn("shown: within 5%", self.verdict(lines))

    def test_no_size_to_judge_still_gives_the_table(self):
        lines = report(rounds_of({MIB // 2: [1.0] * 6}))
        self.assertRegex(lines[1], r"^ +524288 ")
        self.assertEqual(lines[-1], "target: no size of 1 MiB or more to judge")

    def test_rounds_that_differ_between_sizes_are_given_as_a_range(self):
        runs = rounds_of({MIB: [1.0] * 8, 2 * MIB: [1.0] * 8})
        del runs["redline"][7][2 * MIB]
        self.assertTrue(any("(medians of 7-8 paired rounds, against MPI_Allreduce loop)" in line
                            for line in report(runs)))

    def test_a_control_that_leaves_out_one_warns_either_way(self):
        runs = rounds_of({MIB: [1.0] * 8, 2 * MIB: [1.0] * 8, 4 * MIB: [1.0] * 8})
        runs["peer again"] = [{MIB: 10.0 * (1 + 0.01 * (i % 2)), 2 * MIB: 11.0, 4 * MIB: 9.0} for i in range(8)]
        lines = report(runs)
        self.assertIn("control: the peer against itself reads 0.900 to 1.100 at >= 1 MiB", lines)
        self.assertEqual(lines[-1].split(" bytes")[0], "WARNING: the peer differs from itself at 2097152, 4194304")

    def test_one_size_in_many_leaving_out_one_by_chance_does_not_warn(self):
        # Seven sizes, 24 rounds: each interval at 99.29% runs from the 6th
        # to the 19th of 24. At 1 MiB the 7th to 18th (a lone 95% interval)
        # would leave out 1; the 6th to 19th do not.
        sizes = [MIB << i for i in range(7)]
        runs = rounds_of({b: [1.0] * 24 for b in sizes})
        at_one_mib = [0.95, 0.96, 0.97, 0.98, 0.985, 0.99] + [1.01 + 0.01 * i for i in range(18)]
        runs["peer again"] = [{b: 10.0 * (at_one_mib[i] if b == MIB else 1.0) for b in sizes} for i in range(24)]
        lines = report(runs)
        self.assertRegex(lines[1], r" 1\.0[0-9]{2} +0\.990-1\.130$")
        self.assertFalse(any("WARNING" in line for line in lines), lines)
        # One more round below 1 gone, and it is more than chance.
        at_one_mib[5] = 1.005
        runs["peer again"] = [{b: 10.0 * (at_one_mib[i] if b == MIB else 1.0) for b in sizes} for i in range(24)]
        self.assertTrue(report(runs)[-1].startswith("WARNING: the peer differs from itself at 1048576 bytes"))

    def test_a_control_with_too_few_rounds_says_it_was_not_checked(self):
        sizes = [MIB << i for i in range(7)]
        runs = rounds_of({b: [1.0] * 6 for b in sizes})
        runs["peer again"] = [{b: 20.0 for b in sizes} for _ in range(6)]
        lines = report(runs)
        self.assertIn("control: the peer against itself reads 2.000 to 2.000 at >= 1 MiB "
                      "(too few rounds to check it for bias)", lines)
        self.assertFalse(any("WARNING" in line for line in lines), lines)


class RoundsNeededTest(unittest.TestCase):
    def test_the_fewest_rounds_for_a_confidence(self):
        self.assertEqual(compare.rounds_needed(0.95), 6)
        self.assertEqual(compare.rounds_needed(1 - 0.05 / 7), 9)
        self.assertEqual(compare.rounds_needed(1 - 0.05 / 25), 10)
        self.assertEqual(compare.rounds_needed(1 - 0.05 / 102), 12)


def report(runs):
    return compare.report(runs, "MPI_Allreduce loop", 0.05)


if __name__ == "__main__":
    sys.exit(unittest.main())
