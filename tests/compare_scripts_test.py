#!/usr/bin/env python3
"""The pure parts of scripts/compare-*: what they read from the tools' JSON (run here for real: train_step_bench
memory, attention_bench plan and gemm_bench predict need no GPU), the ratio and verdict logic, the printed lines
and CSV rows, and the flags they refuse (exit 2, naming the flag and the value).

  python3 tests/compare_scripts_test.py BUILD_DIR

The scripts are programs, not modules, so each is loaded from its file. Their GPU paths (torch, and the tools'
GPU subcommands) are not run here; without a GPU or torch each script exits 77, which is checked.
"""
import csv
import decimal
import glob
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import types
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "scripts")
BUILD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else os.path.join(ROOT, "build")
sys.path.insert(0, SCRIPTS)
import compare_common as common  # noqa: E402


def load(name):
    loader = importlib.machinery.SourceFileLoader(name.replace("-", "_"), os.path.join(SCRIPTS, name))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


train = load("compare-train-step")
attention = load("compare-attention")
gemm = load("compare-gemm")
attention_gemms = load("compare-attention-gemms")
profile = load("compare-profile")


def run_script(name, *flags):
    """(exit status, stderr) of the script run as a program."""
    done = subprocess.run([sys.executable, os.path.join(SCRIPTS, name)] + list(flags), capture_output=True,
                          text=True, timeout=300)
    return done.returncode, done.stderr


class CommonTest(unittest.TestCase):
    def test_ratios_pair_rounds_and_skip_missing_figures(self):
        # Round 2 has no figure on one side: two ratios, 2.0 and 1.0.
        self.assertEqual(common.ratios([4.0, None, 3.0], [2.0, 5.0, 3.0]), (1.5, 1.0, 2.0, 2))
        self.assertIsNone(common.ratios([None, 1.0], [1.0, 0.0]))

    def test_ratio_text_and_cells(self):
        r = (1.2345, 1.1, 1.3, 3)
        self.assertEqual(common.ratio_text(r), "1.234x (spread 1.100-1.300 over 3 rounds)")
        self.assertEqual(common.ratio_text((1.0, 1.0, 1.0, 1)), "1.000x (spread 1.000-1.000 over 1 round)")
        self.assertEqual(common.ratio_cells(r, "ratio_x"),
                         {"ratio_x": "1.2345", "ratio_x_min": "1.1000", "ratio_x_max": "1.3000"})
        self.assertEqual(common.ratio_cells(None), {"ratio": "", "ratio_min": "", "ratio_max": ""})

    def test_verdict_says_whether_every_round_agreed(self):
        self.assertEqual(common.verdict_of((1.3, 1.25, 1.4, 3), 1.2), "met (every round)")
        self.assertEqual(common.verdict_of((1.3, 1.1, 1.4, 3), 1.2), "met (not every round: lowest 1.100x)")
        self.assertEqual(common.verdict_of((1.1, 1.0, 1.25, 3), 1.2), "missed (some rounds met it: highest 1.250x)")
        self.assertEqual(common.verdict_of((1.1, 1.0, 1.15, 3), 1.2), "missed")

    def test_named_numbers(self):
        self.assertEqual(common.named_numbers("hidden 4096, rope_theta 500000, norm_eps 1e-05, x y"),
                         {"hidden": 4096.0, "rope_theta": 500000.0, "norm_eps": 1e-05})

    def test_flag_checks_name_the_flag_and_value(self):
        with self.assertRaisesRegex(common.FlagError, "--rounds 'x': not a whole number"):
            common.whole("--rounds", "x", 1, 10)
        with self.assertRaisesRegex(common.FlagError, "--build '/no/such': holds no bench/gemm_bench"):
            common.require_tools("/no/such", "gemm_bench")
        with self.assertRaisesRegex(common.FlagError, "--csv '/no/such/out.csv': no folder /no/such"):
            common.check_csv_path("/no/such/out.csv")
        with tempfile.TemporaryDirectory() as folder:
            with self.assertRaisesRegex(common.FlagError, "not a file name"):
                common.check_csv_path(folder)

    def test_run_tool_turns_a_refused_flag_into_exit_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaises(common.BenchFailed) as caught:
                common.run_tool("prog", BUILD, "train_step_bench", ["memory", "--preset", "gpt5"],
                                os.path.join(tmp, "m.json"))
        self.assertEqual(caught.exception.status, 2)
        self.assertIn("--preset 'gpt5'", str(caught.exception))

    def test_run_command_stops_what_runs_past_its_time(self):
        with self.assertRaisesRegex(common.BenchFailed, "ran past 1 s") as caught:
            common.run_command(["sleep", "30"], timeout=1)
        self.assertEqual(caught.exception.status, 1)

    def test_band_verdict_holds_both_sides_of_one(self):
        self.assertEqual(common.band_verdict((1.02, 0.99, 1.04, 3), 0.05), "met (every round)")
        self.assertEqual(common.band_verdict((0.95, 0.95, 1.05, 2), 0.05), "met (every round)")  # the edges count
        self.assertEqual(common.band_verdict((1.03, 0.97, 1.08, 3), 0.05), "met (not every round: 0.970x-1.080x)")
        self.assertEqual(common.band_verdict((1.07, 1.01, 1.10, 3), 0.05),
                         "missed (the rounds' spread 1.010x-1.100x reaches the band)")
        self.assertEqual(common.band_verdict((0.90, 0.88, 0.93, 3), 0.05), "missed")

    def test_write_csv_from_dicts_and_from_lists(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "x.csv")
            common.write_csv(path, [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}])
            with open(path) as f:
                self.assertEqual(list(csv.reader(f)), [["a", "b"], ["1", "x"], ["2", "y"]])
            common.write_csv(path, [[1, 2]], ["p", "q"])
            with open(path) as f:
                self.assertEqual(list(csv.reader(f)), [["p", "q"], ["1", "2"]])


def llama3_8b_matmul(layers):
    """N_matmul by hand: per layer Q, K, V, O (K and V 8 heads of 128) and SwiGLU's three, plus the logits."""
    h, kv, ffn, vocab = 4096, 8 * 128, 14336, 128256
    return (h * (h + 2 * kv) + h * h + 3 * h * ffn) * layers + h * vocab


class TrainStepTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.args, cls.model = train.parse_flags(["--build", BUILD, "--preset", "llama3-8b", "--layers", "2",
                                                 "--seq", "4096", "--mbs", "2"])

    def test_the_model_is_what_train_step_bench_memory_states(self):
        m = self.model
        self.assertEqual((m.preset, m.layers, m.preset_layers, m.seq, m.mbs), ("llama3-8b", 2, 32, 4096, 2))
        self.assertEqual((m.hidden, m.heads, m.kv_heads, m.head_dim, m.kv_dim, m.ffn, m.vocab),
                         (4096, 32, 8, 128, 1024, 14336, 128256))
        self.assertEqual((m.rope_theta, m.norm_eps), (500000.0, 1e-5))
        self.assertEqual(m.matmul_count, llama3_8b_matmul(2))
        # + the embedding, two norms per layer and the final norm
        self.assertEqual(m.param_count, llama3_8b_matmul(2) + 128256 * 4096 + 2 * 2 * 4096 + 4096)

    def test_step_flops_are_6n_tokens_plus_three_causal_attention_forwards(self):
        tokens, s = 2 * 4096, 4096.0
        attention_forward = 4.0 * 2 * 32 * 128 * s * (s + 1) / 2
        expected = 6.0 * llama3_8b_matmul(2) * tokens + 3 * attention_forward * 2
        self.assertAlmostEqual(self.model.step_flops / expected, 1.0, places=12)
        self.assertEqual(self.args.seq, 4096)
        self.assertEqual(self.args.mbs, 2)

    def test_describe(self):
        self.assertEqual(self.model.describe(),
                         "llama3-8b, 2 of its 32 layers (hidden 4096, 32 query / 8 KV heads of d = 128, ffn 14336, "
                         "vocab 128256, rope theta 500000)")

    def test_peak_is_the_one_train_step_bench_divides_by(self):
        report = {"context": {"redline": {"summary": {"gpu": "NVIDIA H200 (MFU against H200 SXM's dense bf16 peak)"}}},
                  "benchmarks": [{"status": "ok", "model_tflops": 494.7, "mfu_pct": 50.0}]}
        name, tflops = train.bench_peak(report)
        self.assertEqual(name, "H200 SXM")
        self.assertAlmostEqual(tflops, 989.4)
        report["benchmarks"][0].pop("mfu_pct")  # a GPU its table lacks: no MFU on any side
        self.assertIsNone(train.bench_peak(report))

    def test_bench_figures_read_the_row_else_stdout(self):
        row = {"status": "ok", "tokens_per_s": 1000.0, "step_time_ms": 8.0, "mfu_pct": 40.0, "model_tflops": 395.0}
        figures, note = train.bench_figures({"benchmarks": [row]}, "")
        self.assertEqual((figures["tokens_per_s"], figures["model_tflops"], note), (1000.0, 395.0, ""))
        figures, note = train.bench_figures(None, "tokens_per_s: 900\nmfu_pct: 36.5\n")
        self.assertEqual((figures["tokens_per_s"], figures["mfu_pct"]), (900.0, 36.5))
        self.assertEqual(note, "train_step_bench wrote no JSON row: its stdout read")
        figures, note = train.bench_figures({"benchmarks": [{"status": "oom", "note": "out of memory"}]}, "")
        self.assertIsNone(figures["tokens_per_s"])
        self.assertEqual(note, "train_step_bench's row is oom: out of memory")

    def summarize(self, ours, eager, compile_, own_mfu):
        sides = [train.BENCH, train.EAGER, train.COMPILE]
        names = ("tokens_per_s", "step_time_ms", "peak_bytes", "predicted_bytes", "first_step_s")
        figures = {side: {name: [None] * len(ours) for name in names} for side in sides}
        for side, values in zip(sides, (ours, eager, compile_)):
            figures[side]["tokens_per_s"] = values
        notes = {side: [] for side in sides}
        self.args.rounds = len(ours)
        return train.summarize(self.args, self.model, sides, figures, notes, ("H200 SXM", 989.4), own_mfu, [])

    def test_summary_lines_and_rows(self):
        lines, rows = self.summarize([1300.0, 1250.0], [1000.0, 1000.0], [1300.0, 1400.0], [None])
        self.assertEqual(lines[0], "medians over 2 rounds:")
        self.assertIn("  train_step_bench / torch eager: 1.275x (spread 1.250-1.300 over 2 rounds): target >= 1.2x: "
                      "met (every round)", lines)
        self.assertIn("  train_step_bench / torch compile: 0.946x (spread 0.893-1.000 over 2 rounds): target >= 1.0x: "
                      "missed (some rounds met it: highest 1.000x)", lines)
        eager = next(r for r in rows if r["side"] == train.EAGER)
        self.assertEqual((eager["ratio"], eager["target"], eager["tokens_per_s"]), ("1.2750", "1.2", "1000.00"))
        # MFU: the step's model FLOPs x steps per second / the peak, the same count for every side.
        expected = 100 * self.model.step_flops * 1000.0 / (2 * 4096) / 989.4e12
        self.assertAlmostEqual(float(eager["mfu_pct"]), expected, places=2)

    def test_a_different_own_mfu_is_noted(self):
        mine = 100 * self.model.step_flops * 1275.0 / (2 * 4096) / 989.4e12
        lines, _ = self.summarize([1300.0, 1250.0], [1000.0, 1000.0], [1300.0, 1400.0], [mine * 1.1])
        self.assertTrue(any("is not this script's" in line for line in lines), lines)
        lines, _ = self.summarize([1300.0, 1250.0], [1000.0, 1000.0], [1300.0, 1400.0], [mine])
        self.assertFalse(any("is not this script's" in line for line in lines), lines)

    def test_round_order_turns(self):
        sides = [train.BENCH, train.EAGER, train.COMPILE]
        self.assertEqual(train.round_order(0, sides), sides)
        self.assertEqual(train.round_order(1, sides), sides[::-1])

    def test_bad_flags_exit_2_naming_the_flag(self):
        for flags, named in ((["--preset", "gpt5"], "--preset 'gpt5'"), (["--layers", "0"], "--layers '0'"),
                             (["--seq", "x"], "--seq 'x'"), (["--recompute", "some"], "--recompute 'some'"),
                             (["--rounds", "0"], "--rounds '0'"), (["--csv", "/no/such/x.csv"], "--csv"),
                             (["--bogus"], "--bogus")):
            status, err = run_script("compare-train-step", "--build", BUILD, *flags)
            self.assertEqual(status, 2, (flags, err))
            self.assertIn(named, err)
        status, err = run_script("compare-train-step", "--build", "/no/such")
        self.assertEqual((status, "--build '/no/such'" in err), (2, True), err)

    def test_without_torch_or_a_gpu_it_skips(self):
        status, err = run_script("compare-train-step", "--build", BUILD, "--layers", "1", "--seq", "128")
        self.assertEqual(status, 77, err)
        self.assertIn("skipped", err)


def attention_forward(b, a, s, d, causal):
    scores = s * (s + 1) / 2 if causal else float(s) * s
    return 4.0 * b * a * d * scores


class AttentionTest(unittest.TestCase):
    def test_flops_are_attention_bench_plans(self):
        args, shapes = attention.parse_flags(["--build", BUILD, "--published", "--fp8"])
        self.assertEqual([s.key() for s in shapes],
                         [(4, 4096, 16, 16, 128, False, "bf16"), (1, 16384, 64, 8, 128, False, "bf16"),
                          (1, 16384, 16, 16, 128, False, "fp16"), (1, 32768, 64, 8, 128, False, "fp8")])
        for s in shapes:
            forward = attention_forward(s.batch, s.heads, s.seq, s.head_dim, s.causal)
            self.assertAlmostEqual(s.flops["fwd"] / forward, 1.0, places=12, msg=s.describe())
            if "bwd" in s.directions:
                self.assertAlmostEqual(s.flops["bwd"] / (2.5 * forward), 1.0, places=12, msg=s.describe())
        self.assertEqual(shapes[-1].directions, ["fwd"])  # fp8: the forward only

    def test_causal_counts_the_unmasked_scores(self):
        _, shapes = attention.parse_flags(["--build", BUILD, "--causal", "--seq", "1000", "--batch", "2",
                                           "--hidden", "1024", "--heads", "8", "--kv-heads", "2"])
        self.assertAlmostEqual(shapes[0].flops["fwd"] / attention_forward(2, 8, 1000, 128, True), 1.0, places=12)

    def test_cudnn_row(self):
        report = {"benchmarks": [{"path": "cudnn", "direction": "fwd", "status": "ok", "tflops": 600.5},
                                 {"path": "cudnn", "direction": "bwd", "status": "wrong", "note": "max error 1"}]}
        self.assertEqual(attention.cudnn_row(report, "fwd"), (600.5, ""))
        self.assertEqual(attention.cudnn_row(report, "bwd"), (None, "attention_bench's cudnn bwd row is wrong: max error 1"))
        self.assertEqual(attention.cudnn_row({"benchmarks": []}, "fwd"), (None, "attention_bench wrote no cudnn fwd row"))

    def test_refusal_reason(self):
        messages = ["Flash attention kernel not used because: (Triggered internally at x.cpp:1.)",
                    "head dim 256 is too large (Triggered internally at x.cpp:2.)",
                    "cuDNN attention kernel not used because:", "other"]
        self.assertEqual(attention.refusal_reason(messages, "torch-flash"), "head dim 256 is too large")
        self.assertEqual(attention.refusal_reason(messages, "torch-cudnn"), "other")

    def test_summary_judges_the_target_and_the_published_figure_on_its_gpu(self):
        _, shapes = attention.parse_flags(["--build", BUILD, "--published"])
        cudnn_919 = shapes[1]
        figures = {"attention_bench": [700.0, 680.0], "torch-cudnn": [650.0, 680.0], "torch-flash": [None, None]}
        lines, row = attention.summarize(cudnn_919, "fwd", figures, ["", ""], "NVIDIA H200", 2)
        self.assertIn("    / torch cuDNN: 1.038x (spread 1.000-1.077 over 2 rounds): target >= 1.0x: met (every round)",
                      lines)
        self.assertIn("    / torch flash: no ratio (no round with both figures)", lines)
        self.assertEqual(lines[-1], "      met (98.3% of published)")
        self.assertEqual((row["ratio_torch_cudnn"], row["ratio_torch_flash"]), ("1.0385", ""))
        _, row = attention.summarize(cudnn_919, "fwd", figures, ["", ""], "NVIDIA H100 80GB HBM3", 2)
        self.assertEqual(row["verdict_published"], "not judged: published for H200, this is NVIDIA H100 80GB HBM3")

    def test_bad_flags_exit_2_naming_the_flag(self):
        for flags, named in ((["--heads", "3"], "--heads '3'"), (["--kv-heads", "5"], "--kv-heads '5'"),
                             (["--dtype", "int8"], "--dtype 'int8'"), (["--rounds", "x"], "--rounds 'x'")):
            status, err = run_script("compare-attention", "--build", BUILD, *flags)
            self.assertEqual(status, 2, (flags, err))
            self.assertIn(named, err)

    def test_without_torch_or_a_gpu_it_skips(self):
        status, err = run_script("compare-attention", "--build", BUILD, "--seq", "128")
        self.assertEqual(status, 77, err)


class GemmTest(unittest.TestCase):
    def test_flops_are_gemm_bench_predicts(self):
        with tempfile.TemporaryDirectory() as tmp:
            flops = gemm.gemm_flops(BUILD, 8192, 8192, 4096, os.path.join(tmp, "p.json"))
        self.assertEqual(flops, 2.0 * 8192 * 8192 * 4096)

    def test_best_shapes_rank_each_shape_once(self):
        rows = [{"dtype": "bf16", "m": "4096", "n": "4096", "k": "4096", "tflops": 700.0},
                {"dtype": "bf16", "m": "8192", "n": "8192", "k": "8192", "tflops": 750.0},
                {"dtype": "bf16", "m": "4096", "n": "4096", "k": "4096", "tflops": 720.0},
                {"dtype": "bf16", "result": "mamf", "m": "1", "n": "1", "k": "1", "tflops": 999.0},
                {"dtype": "fp8_e4m3", "m": "2048", "n": "2048", "k": "2048", "tflops": 1200.0}]
        self.assertEqual(gemm.best_shapes(rows, "bf16", 5), [(8192, 8192, 8192), (4096, 4096, 4096)])
        self.assertEqual(gemm.best_shapes(rows, "bf16", 1), [(8192, 8192, 8192)])
        self.assertEqual(gemm.best_shapes(rows, "fp8", 5), [(2048, 2048, 2048)])

    def test_best_line(self):
        line = gemm.best_line("bf16", {(1, 2, 3): 700.0, (4, 5, 6): 720.0}, {(1, 2, 3): 730.0})
        self.assertEqual(line, "bf16: gemm_bench 720.0 TFLOPS at (4, 5, 6), torch.matmul 730.0 at (1, 2, 3): "
                               "ratio 0.986")

    def test_bad_flags_exit_2_naming_the_flag(self):
        for flags, named in ((["--rounds", "0"], "--rounds '0'"), (["--top", "x"], "--top 'x'"),
                             (["--algos", "65"], "--algos '65'"), (["--dtypes", "bf16,int4"], "--dtypes 'int4'")):
            status, err = run_script("compare-gemm", "--build", BUILD, *flags)
            self.assertEqual(status, 2, (flags, err))
            self.assertIn(named, err)

    def test_without_torch_or_a_gpu_it_skips(self):
        status, err = run_script("compare-gemm", "--build", BUILD)
        self.assertEqual(status, 77, err)


class AttentionGemmsTest(unittest.TestCase):
    def test_report_lines_and_csv(self):
        args = attention_gemms.parse_flags(["--build", BUILD, "--rounds", "2"])
        ours = {"gemm_layout": "tn", "gemm_m": 4096, "gemm_n": 4096, "gemm_k": 128, "gemm_batch": 64,
                "tile_m": 256, "tile_n": 128, "split_k": 1, "sm_clock_mhz_min": 1500.0}
        theirs = dict(ours, sm_clock_mhz_min=1700.0, note="")
        figures = {"scores": [(500.0, 490.0), (480.0, 500.0)]}
        lines = attention_gemms.report(figures, {"scores": (ours, theirs)}, {"scores": [(ours, theirs)] * 2}, args)
        self.assertEqual(lines, [["scores", "tn", 4096, 4096, 128, 64, "490.00", "495.00", "0.9902", "0.9600",
                                  "1.0204", "256x128 split-k 1", "256x128 split-k 1", "1500", "1700", "PASS"]])

    def test_bad_flags_exit_2_naming_the_flag(self):
        for flags, named in ((["--dtype", "fp8"], "--dtype 'fp8'"), (["--heads", "5"], "--heads '5'"),
                             (["--build", "/no/such"], "--build '/no/such'")):
            status, err = run_script("compare-attention-gemms", "--build", BUILD, *flags)
            self.assertEqual(status, 2, (flags, err))
            self.assertIn(named, err)


def from_trace_supported():
    """Whether this build's redline profile reads a saved trace (--from-trace)."""
    try:
        done = subprocess.run([os.path.join(BUILD, "bench", "redline"), "profile", "--help"], capture_output=True,
                              text=True, timeout=60)
    except OSError:
        return False
    return "--from-trace" in done.stdout


def redline_from_trace(trace_path, folder):
    """(exit status, stderr, Profile) of `redline profile --from-trace trace_path --step-range ProfilerStep
    --skip 0`."""
    csv_path, json_path = os.path.join(folder, "t.csv"), os.path.join(folder, "t.json")
    done = subprocess.run([os.path.join(BUILD, "bench", "redline"), "profile", "--from-trace", trace_path,
                           "--step-range", "ProfilerStep", "--skip", "0", "--csv", csv_path, "--json", json_path,
                           "--quiet"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return done.returncode, done.stderr, None
    summary = common.report_summary(common.read_json(json_path))
    return 0, done.stderr, profile.Profile(profile.csv_rows(csv_path), summary)


# A FORMAT CHECK, not captured output: a minimal torch.profiler Chrome trace typed here from Kineto's writer
# (libkineto/src/output_json.cpp's event layout, CuptiActivity.cpp's args, cupti_strings.cpp's copy kinds,
# torch/profiler/profiler.py's ProfilerStep#N), the noise a real trace carries among its GPU records included.
# CapturedTorchTraceTest below runs the converter on what torch really wrote, once tests/captured/ holds it.
FORMAT_CHECK_TRACE = """{
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "computeMajor": 9, "computeMinor": 0}],
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1765000000000000000,
  "traceEvents": [
  {"name": "process_name", "ph": "M", "ts": 0.000, "pid": 0, "tid": 0, "args": {"name": "python3"}},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#5", "pid": 4242, "tid": 4242,
   "ts": 1000.000, "dur": 500.250, "args": {"External id": 1, "Record function id": 0, "Ev Idx": 0}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 4242, "tid": 4242, "ts": 1001.500, "dur": 20.000,
   "args": {"External id": 2, "Ev Idx": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242, "ts": 1005.000,
   "dur": 4.000, "args": {"External id": 2, "cbid": 211, "correlation": 99}},
  {"ph": "s", "id": 99, "pid": 4242, "tid": 4242, "ts": 1005.000, "cat": "ac2g", "name": "ac2g"},
  {"ph": "X", "cat": "kernel", "name": "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT", "pid": 0, "tid": 7,
   "ts": 1010.125, "dur": 100.500, "args": {"External id": 2, "queued": 0, "device": 0, "context": 1, "stream": 7,
   "correlation": 99, "registers per thread": 168, "shared memory": 213000, "blocks per SM": 1, "warps per SM": 12,
   "grid": [132, 1, 1], "block": [384, 1, 1], "est. achieved occupancy %": 19}},
  {"ph": "f", "id": 99, "pid": 0, "tid": 7, "ts": 1010.125, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#5", "pid": 0, "tid": 7, "ts": 1010.124,
   "dur": 400.000, "args": {"External id": 1}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
   "ts": 1200.000, "dur": 10.000, "args": {"device": 0, "context": 1, "stream": 7, "correlation": 100,
   "bytes": 4096, "memory bandwidth (GB/s)": 0.4096}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, "tid": 7,
   "ts": 1220.000, "dur": 2.000, "args": {"device": 0, "context": 1, "stream": 7, "correlation": 101,
   "bytes": 8192, "memory bandwidth (GB/s)": 4.096}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy PtoP (Device -> Device)", "pid": 0, "tid": 9,
   "ts": 1230.000, "dur": 3.000, "args": {"fromDevice": 1, "inDevice": 0, "toDevice": 0, "fromContext": 2,
   "inContext": 1, "toContext": 1, "stream": 9, "correlation": 102, "bytes": 1024,
   "memory bandwidth (GB/s)": 0.341}},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 1300.000, "dur": 1.000,
   "args": {"device": 0, "context": 1, "stream": 7, "correlation": 103, "bytes": 512,
   "memory bandwidth (GB/s)": 0.512}},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#6", "pid": 4242, "tid": 4242,
   "ts": 1500.250, "dur": 500.000, "args": {"External id": 5, "Record function id": 0, "Ev Idx": 4}},
  {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>(int)\\twith a tab",
   "pid": 0, "tid": 7, "ts": 1510.000, "dur": 200.000, "args": {"device": 0, "context": 1, "stream": 7,
   "correlation": 104}},
  {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 2100.000}
  ],
  "traceName": "/tmp/trace.json"
}"""

FORMAT_CHECK_CONVERTED = (
    "# redline profile trace 1\n"
    "range\t1000000\t1500250\tProfilerStep#5\n"
    "kernel\t1010125\t1110625\t0\t7\tnvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT\n"
    "memcpy\t1200000\t1210000\t0\t7\th2d\t4096\n"
    "memcpy\t1220000\t1222000\t0\t7\td2d\t8192\n"
    "memcpy\t1230000\t1233000\t0\t9\tother\t1024\n"
    "memset\t1300000\t1301000\t0\t7\t512\n"
    "range\t1500250\t2000250\tProfilerStep#6\n"
    "kernel\t1510000\t1710000\t0\t7\tvoid at::native::vectorized_elementwise_kernel<4>(int) with a tab\n")


def format_check_trace():
    return json.loads(FORMAT_CHECK_TRACE, parse_float=decimal.Decimal)


def profile_rows(*rows):
    """redline profile CSV rows: (step, category, wall_ms or time_ms[, status])."""
    out = []
    for step, category, ms, *status in rows:
        out.append({"tool": "redline_profile", "step": str(step), "category": category,
                    "wall_ms" if category == "step" else "time_ms": str(ms), "status": status[0] if status else "ok"})
    return out


class ProfileTest(unittest.TestCase):
    def test_category_means_are_over_every_profiled_step(self):
        p = profile.Profile(profile_rows((3, "step", 10.0), (3, "gemm", 6.0), (3, "memset", 0.5),
                                         (4, "step", 12.0), (4, "gemm", 8.0), (5, "step", 11.0, "error")),
                            {"steps": "7 found by the repeating kernel sequence (41 kernels a step); 2 profiled after "
                                      "skipping 3", "trace problem": "cuptiActivityEnable failed"})
        self.assertEqual(p.steps, 2)
        self.assertEqual(p.category_ms, {"gemm": 7.0, "memset": 0.25})  # step 4 had no memset: it counts 0
        self.assertEqual(p.wall_ms, 11.0)
        self.assertEqual((p.found, p.method), (7, "the repeating kernel sequence (41 kernels a step)"))
        self.assertEqual(p.problems, ["trace problem: cuptiActivityEnable failed"])
        self.assertEqual(p.steps_note("redline profile", 7, 2), "")
        self.assertEqual(p.steps_note("redline profile", 13, 2),
                         "redline profile found 7 steps by the repeating kernel sequence (41 kernels a step), the "
                         "program ran 13: the skipped ones may not be exactly the warm-up")
        self.assertEqual(p.steps_note("x", 7, 10), "x profiled 2 steps, not 10 (7 found by the repeating kernel "
                                                   "sequence (41 kernels a step))")
        empty = profile.Profile([], {})
        self.assertEqual((empty.steps, empty.category_ms, empty.wall_ms, empty.found), (0, {}, None, None))

    def test_chrome_trace_format_check(self):
        # Not captured output: FORMAT_CHECK_TRACE is typed from Kineto's writer (see above it).
        text, counts = profile.chrome_to_redline(format_check_trace())
        self.assertEqual(text, FORMAT_CHECK_CONVERTED)
        self.assertEqual(counts, {"kernel": 2, "memcpy": 3, "memset": 1, "range": 2})

    def test_nanoseconds_stay_exact_beyond_a_doubles_digits(self):
        # Older releases wrote microseconds since the epoch: 19 digits of nanoseconds.
        doc = json.loads('[{"ph": "X", "cat": "kernel", "name": "k", "ts": 1740461679470813.123, "dur": 0.001, '
                         '"args": {"device": 1, "stream": 13}}]', parse_float=decimal.Decimal)
        text, _ = profile.chrome_to_redline(doc)
        self.assertEqual(text.splitlines()[1], "kernel\t1740461679470813123\t1740461679470813124\t1\t13\tk")
        self.assertEqual(profile.to_ns(1712667379482786, "ts"), 1712667379482786000)  # whole microseconds

    def test_converter_names_a_record_it_cannot_place(self):
        doc = {"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "pid": "Spans",
                                "args": {"correlation": 4}}]}
        with self.assertRaisesRegex(ValueError, r"event 0 \(kernel 'k'\) has no device and stream"):
            profile.chrome_to_redline(doc)
        with self.assertRaisesRegex(ValueError, "not a Chrome trace"):
            profile.chrome_to_redline({"events": []})
        # pid and tid carry the device and stream where args lack them (Kineto writes both)
        text, _ = profile.chrome_to_redline([{"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "ts": 2,
                                              "dur": 1, "pid": 0, "tid": 7, "args": {"bytes": 8}}])
        self.assertEqual(text.splitlines()[1], "memset\t2000\t3000\t0\t7\t8")

    @unittest.skipUnless(from_trace_supported(), "this build's redline profile has no --from-trace")
    def test_the_converted_trace_reads_back_through_redline_profile(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "converted.trace")
            with open(path, "w") as f:
                f.write(profile.chrome_to_redline(format_check_trace())[0])
            status, err, p = redline_from_trace(path, tmp)
        self.assertEqual(status, 0, err)
        self.assertEqual((p.steps, p.found, p.method), (2, 2, 'NVTX ranges matching "ProfilerStep"'))
        self.assertAlmostEqual(p.wall_ms, 0.500125)
        # Kernel time, whichever C++ category each kernel falls in: (100.5 + 200) us over 2 steps.
        kernels = sum(p.category_ms.get(c, 0.0) for c in ("gemm", "attention", "elementwise", "nccl"))
        self.assertAlmostEqual(kernels, 0.30050 / 2)
        for category, ms in (("memcpy_h2d", 0.010), ("memcpy_d2d", 0.002), ("memcpy_other", 0.003), ("memset", 0.001)):
            self.assertAlmostEqual(p.category_ms[category], ms / 2, msg=category)

    def test_trimmed_trace_keeps_the_first_gpu_records_and_their_steps(self):
        doc = format_check_trace()
        kept = profile.trimmed_trace(doc, gpu_records=2, others=1, metadata=5)
        events = kept["traceEvents"]
        # The first two GPU records, their step, the first other event in that step (the CPU op), the metadata.
        self.assertEqual([e.get("name") for e in events],
                         ["process_name", "ProfilerStep#5", "aten::mm", "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT",
                          "Memcpy HtoD (Pageable -> Device)"])
        self.assertEqual((kept["baseTimeNanoseconds"], kept["traceName"]), (1765000000000000000, "/tmp/trace.json"))
        _, counts = profile.chrome_to_redline(kept)
        self.assertEqual(counts, {"kernel": 1, "memcpy": 1, "memset": 0, "range": 1})
        with self.assertRaisesRegex(ValueError, "no GPU record"):
            profile.trimmed_trace({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "x", "ts": 1}]})

    def test_capture_writes_the_trimmed_trace_with_what_made_it(self):
        fake_torch = types.SimpleNamespace(__version__="2.99.0", version=types.SimpleNamespace(cuda="13.0"))
        args = types.SimpleNamespace(steps=20, warmup=5, layers=4, seq=2048, mbs=4)
        with tempfile.TemporaryDirectory() as tmp:
            path = profile.capture(format_check_trace(), tmp, fake_torch, "NVIDIA H200", args)
            self.assertEqual(os.path.basename(path), "torch_profiler_trace.json")
            with open(path) as f:
                kept = json.load(f, parse_float=decimal.Decimal)
        made = kept["redline_capture"]
        self.assertEqual((made["torch"], made["cuda"], made["gpu"]), ("2.99.0", "13.0", "NVIDIA H200"))
        self.assertEqual(made["command"], "python3 tests/torch_profile_train.py --steps 20 --warmup 5 --layers 4 "
                                          "--seq 2048 --batch 4 --torch-profile OUT.json")
        self.assertEqual(profile.chrome_to_redline(kept)[0], FORMAT_CHECK_CONVERTED)  # small: all of it kept

    def test_own_figures_read_train_step_bench_runs_row(self):
        row = {"tool": "train_step_bench", "gpu": "NVIDIA H200", "status": "ok", "note": "", "gemm_ms": "80.5",
               "attention_ms": "30", "elementwise_ms": "12", "step_time_ms": "125", "forward_ms": "40",
               "backward_ms": "75", "optimizer_ms": "9"}
        figures, gpu, note = profile.own_figures([row])
        self.assertEqual((figures["gemm_ms"], figures["step_time_ms"], gpu, note), (80.5, 125.0, "NVIDIA H200", ""))
        figures, _, note = profile.own_figures([dict(row, status="oom", note="out of memory")])
        self.assertEqual((figures["gemm_ms"], note), (None, "train_step_bench's row is oom: out of memory"))
        self.assertEqual(profile.own_figures([])[2], "train_step_bench wrote no row")

    @staticmethod
    def profiled(gemm, attention, elementwise, wall, memset=0.0):
        rows = [(0, "step", wall), (0, "gemm", gemm), (0, "attention", attention), (0, "elementwise", elementwise)]
        return profile.Profile(profile_rows(*(rows + ([(0, "memset", memset)] if memset else []))))

    def test_train_step_summary_judges_each_category_the_step_and_the_overhead(self):
        own = {"gemm_ms": 100.0, "attention_ms": 50.0, "elementwise_ms": 30.0, "step_time_ms": 190.0}
        rounds = [{"profile": self.profiled(101, 50.5, 29, 191), "own": own, "inner": {"step_time_ms": 192.0}},
                  {"profile": self.profiled(99, 49, 35, 189), "own": own, "inner": {"step_time_ms": 197.0}}]
        lines, rows = profile.train_step_summary(rounds)
        by = {row["figure"]: row for row in rows}
        self.assertEqual(list(by), ["gemm", "attention", "elementwise", "step", "step, same run", "profiler overhead"])
        self.assertEqual((by["gemm"]["ratio"], by["gemm"]["target"], by["gemm"]["verdict"]),
                         ("1.0000", "0.95-1.05", "met (every round)"))
        self.assertEqual(by["elementwise"]["verdict"], "missed (the rounds' spread 0.967x-1.167x reaches the band)")
        self.assertEqual((by["step, same run"]["target"], by["step, same run"]["verdict"]),
                         ("", "shown: step detection apart from the overhead"))
        overhead = by["profiler overhead"]
        self.assertEqual((overhead["ratio"], overhead["target"], overhead["verdict"]),
                         ("1.0237", "< 3%", "met (not every round: highest +3.7%)"))
        self.assertIn("  profiler overhead          194.500           190.000  +2.37% (spread +1.05% to +3.68%, "
                      "2 rounds)   < 3%       met (not every round: highest +3.7%)", lines)
        self.assertTrue(lines[0].split()[:3] == ["figure", "redline", "ms"], lines[0])

    def test_a_missing_figure_is_not_judged(self):
        own = {"gemm_ms": None, "attention_ms": 50.0, "elementwise_ms": 30.0, "step_time_ms": 190.0}
        rounds = [{"profile": self.profiled(101, 50, 30, 190), "own": own, "inner": {"step_time_ms": None}}]
        _, rows = profile.train_step_summary(rounds)
        by = {row["figure"]: row for row in rows}
        self.assertEqual(by["gemm"]["verdict"], "not judged: no round with both figures")
        self.assertEqual(by["profiler overhead"]["verdict"], "not judged: no round with both figures")

    def test_torch_summary_judges_the_categories_that_matter(self):
        rounds = [{"profile": self.profiled(101, 50, 30, 190, memset=0.02),
                   "torch": self.profiled(100, 52, 30, 196, memset=0.01)}]
        lines, rows = profile.torch_summary(rounds)
        by = {row["figure"]: row for row in rows}
        self.assertEqual(list(by), ["gemm", "attention", "elementwise", "memset", "step"])  # by size, the step last
        self.assertEqual((by["attention"]["ratio"], by["attention"]["verdict"]), ("0.9615", "met (every round)"))
        self.assertEqual((by["memset"]["target"], by["memset"]["verdict"]),
                         ("", "shown: under 1% of the step on both sides"))
        self.assertEqual(by["step"]["verdict"], "shown: each side's wall holds its own profiler's host-side cost")
        self.assertIn("torch.profiler ms", lines[0])
        # A large category on one side only: missed, whichever side lacks it.
        rounds[0]["torch"].category_ms.pop("attention")
        _, rows = profile.torch_summary(rounds)
        self.assertEqual({r["figure"]: r["verdict"] for r in rows}["attention"],
                         "missed: only redline profile's breakdown has it")
        rounds[0]["torch"].category_ms["nccl"] = 20.0
        _, rows = profile.torch_summary(rounds)
        self.assertEqual({r["figure"]: r["verdict"] for r in rows}["nccl"], "missed")

    def test_bad_flags_exit_2_naming_the_flag(self):
        for flags, named in ((["--against", "nsys"], "--against 'nsys'"), (["--rounds", "0"], "--rounds '0'"),
                             (["--warmup", "0"], "--warmup '0'"), (["--steps", "x"], "--steps 'x'"),
                             (["--preset", "gpt5"], "--preset 'gpt5'"), (["--layers", "0"], "--layers '0'"),
                             (["--against", "torch", "--preset", "llama3-8b"], "--preset 'llama3-8b'"),
                             (["--against", "torch", "--seq", "x"], "--seq 'x'"),
                             (["--capture-torch-trace", ROOT], "--capture-torch-trace"),
                             (["--against", "torch", "--capture-torch-trace", "/no/such"], "--capture-torch-trace "
                                                                                           "'/no/such'"),
                             (["--csv", "/no/such/x.csv"], "--csv"), (["--bogus"], "--bogus")):
            status, err = run_script("compare-profile", "--build", BUILD, *flags)
            self.assertEqual(status, 2, (flags, err))
            self.assertIn(named, err)
        status, err = run_script("compare-profile", "--build", "/no/such")
        self.assertEqual((status, "--build '/no/such'" in err), (2, True), err)

    def test_without_a_gpu_or_torch_it_skips(self):
        status, err = run_script("compare-profile", "--build", BUILD, "--layers", "1", "--seq", "128")
        self.assertEqual(status, 77, err)
        self.assertIn("skipped", err)
        status, err = run_script("compare-profile", "--build", BUILD, "--against", "torch")
        self.assertEqual(status, 77, err)

    def test_the_training_loop_refuses_bad_flags_and_skips_without_torch(self):
        loop = os.path.join(ROOT, "tests", "torch_profile_train.py")
        for flags in (["--steps", "0"], ["--hidden", "100", "--heads", "3"], ["--torch-profile", "/no/such/t.json"]):
            done = subprocess.run([sys.executable, loop] + flags, capture_output=True, text=True, timeout=60)
            self.assertEqual(done.returncode, 2, (flags, done.stderr))
        try:
            import torch  # noqa: F401
        except ImportError:
            done = subprocess.run([sys.executable, loop, "--steps", "1"], capture_output=True, text=True, timeout=60)
            self.assertEqual((done.returncode, "PyTorch is not installed" in done.stderr), (77, True), done.stderr)


CAPTURED_TORCH_TRACES = sorted(glob.glob(os.path.join(ROOT, "tests", "captured", "torch_profiler*.json")))


@unittest.skipUnless(CAPTURED_TORCH_TRACES, "no torch.profiler trace captured yet: the next GPU session captures one "
                                            "(scripts/compare-profile --capture-torch-trace)")
class CapturedTorchTraceTest(unittest.TestCase):
    """The converter on what torch.profiler really wrote (tests/captured/, made by --capture-torch-trace)."""

    def traces(self):
        for path in CAPTURED_TORCH_TRACES:
            yield path, profile.load_chrome_trace(path)

    def test_gpu_records_carry_the_fields_the_converter_reads(self):
        for path, doc in self.traces():
            gpu = [e for e in profile.trace_events(doc) if isinstance(e, dict) and e.get("ph") == "X"
                   and e.get("cat") in profile.GPU_RECORDS]
            self.assertTrue(gpu, f"{path}: no kernel, gpu_memcpy or gpu_memset event")
            for e in gpu:
                args = e.get("args", {})
                self.assertIsInstance(args.get("stream"), int, (path, e))
                self.assertIsInstance(args.get("device", args.get("inDevice")), int, (path, e))
                if e["cat"] != "kernel":
                    self.assertIsInstance(args.get("bytes"), int, (path, e))
                if e["cat"] == "gpu_memcpy":
                    m = profile.COPY.match(e["name"])
                    self.assertTrue(m, (path, e["name"]))
                    self.assertIn(m.group(1), ("HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH",
                                               "PtoP"), (path, e["name"]))
            self.assertTrue(any(profile.is_step_span(e) for e in profile.trace_events(doc)),
                            f"{path}: no ProfilerStep#N span on the CPU")

    def test_every_gpu_record_and_step_converts(self):
        for path, doc in self.traces():
            events = [e for e in profile.trace_events(doc) if isinstance(e, dict) and e.get("ph") == "X"]
            text, counts = profile.chrome_to_redline(doc)
            self.assertEqual(counts["kernel"], sum(e.get("cat") == "kernel" for e in events), path)
            self.assertEqual(counts["memcpy"], sum(e.get("cat") == "gpu_memcpy" for e in events), path)
            self.assertEqual(counts["memset"], sum(e.get("cat") == "gpu_memset" for e in events), path)
            self.assertEqual(counts["range"], sum(profile.is_step_span(e) for e in events), path)
            self.assertEqual(len(text.splitlines()), 1 + sum(counts.values()), path)

    @unittest.skipUnless(from_trace_supported(), "this build's redline profile has no --from-trace")
    def test_redline_profile_finds_its_steps(self):
        for path, doc in self.traces():
            with tempfile.TemporaryDirectory() as tmp:
                converted = os.path.join(tmp, "converted.trace")
                with open(converted, "w") as f:
                    f.write(profile.chrome_to_redline(doc)[0])
                status, err, p = redline_from_trace(converted, tmp)
            self.assertEqual(status, 0, (path, err))
            self.assertGreaterEqual(p.steps, 1, path)
            self.assertTrue(p.method.startswith("NVTX ranges"), (path, p.method))
            self.assertTrue(p.category_ms, path)


class AllreduceFlagsTest(unittest.TestCase):
    def test_bad_flags_exit_2_naming_the_flag(self):
        for flags, named in ((["--rounds", "0"], "--rounds '0'"), (["--ranks", "x"], "--ranks 'x'"),
                             (["-b", "3"], "-b '3'"), (["-b", "6"], "-b '6'"), (["-e", "1K", "-b", "4K"], "-e '1K'"),
                             (["--gpus", "2"], "--gpus '2'")):
            status, err = run_script("compare-allreduce", *flags)
            self.assertEqual(status, 2, (flags, err))
            self.assertIn(named, err)


if __name__ == "__main__":
    unittest.main()
