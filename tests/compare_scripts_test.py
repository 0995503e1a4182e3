#!/usr/bin/env python3
"""The pure parts of scripts/compare-*: what they read from the tools' JSON (run here for real: train_step_bench
memory, attention_bench plan and gemm_bench predict need no GPU), the ratio and verdict logic, the printed lines
and CSV rows, and the flags they refuse (exit 2, naming the flag and the value).

  python3 tests/compare_scripts_test.py BUILD_DIR

The scripts are programs, not modules, so each is loaded from its file. Their GPU paths (torch, and the tools'
GPU subcommands) are not run here; without a GPU or torch each script exits 77, which is checked.
"""
import csv
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile
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
