// The Google Benchmark-format JSON report: parsed back with nlohmann-json
// and, where python3 exists, with Python's json module, then checked field
// by field.
#include "harness/report/gbench_json.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/report/json_writer.hpp"
#include "harness/report/recorded_summary.hpp"
#include "harness/report/report.hpp"
#include "tests/gbench_compare.hpp"
#include "tests/support.hpp"

namespace redline {
namespace {

namespace fs = std::filesystem;

using Json = nlohmann::ordered_json;  // members in the order written

// nlohmann's parser is strict about everything RFC 8259 forbids (raw control
// characters, NaN, trailing text) but keeps the last of two equal keys:
// duplicates are caught here.
Json parse_json(const std::string& text) {
  std::vector<std::set<std::string>> keys;  // per open object
  return Json::parse(text, [&](int, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) keys.emplace_back();
    if (event == Json::parse_event_t::object_end) keys.pop_back();
    if (event == Json::parse_event_t::key && !keys.back().insert(parsed.get<std::string>()).second)
      throw std::runtime_error("duplicate key " + parsed.get<std::string>());
    return true;
  });
}

// ---- the report under test ------------------------------------------------

Report sample_report() {
  Report report;
  report.tool = "gemm_bench";
  report.run_id = "20261122T123456Z-node1-42";
  report.env.redline_version = "0.1.0";
  report.env.git_sha = "abcdef123456";
  report.env.timestamp_utc = "2026-11-22T12:34:56Z";
  report.env.host = "node1";
  report.env.cpu_count = 16;
  report.env.variables = {{"NCCL_DEBUG", "INFO"}};
  GpuInfo gpu;
  gpu.index = 0;
  gpu.name = "NVIDIA H200";
  gpu.memory_bytes = 150ull << 30;
  gpu.sm_clock_mhz = 1980;
  gpu.power_w = 412.5;
  report.env.gpus = {gpu};
  report.env.gpu_source = "nvml";

  for (int rep = 0; rep < 3; ++rep) {
    Row r;
    r.param("m", "4096").param("dtype", "bf16").metric("time_us", 12.5 + rep).metric("tflops", 700.25);
    r.repetition = rep;
    report.rows.push_back(r);
  }
  Row ms;
  ms.param("m", "8192").param("dtype", "bf16").metric("tflops", 650).metric("step_time_ms", 3.25);
  report.rows.push_back(ms);
  Row oom;
  oom.param("m", "65536").param("dtype", "bf16").metric("time_us", std::nan("")).metric("tflops", std::nan(""));
  oom.status = RowStatus::oom;
  oom.note = "CUDA out of memory";
  report.rows.push_back(oom);
  report.summary = {{"saturation_batch", "64 (1234 samples_per_s)"}, {"recommended_batch", "64"}};
  return report;
}

TEST(GbenchJson, IsValidJsonWithContextAndBenchmarks) {
  const Json doc = parse_json(to_gbench_json(sample_report()));
  ASSERT_TRUE(doc.is_object());
  ASSERT_TRUE(doc.contains("context"));
  ASSERT_TRUE(doc.contains("benchmarks"));
  const Json& ctx = doc["context"];
  EXPECT_EQ(ctx["date"], "2026-11-22T12:34:56Z");
  EXPECT_EQ(ctx["host_name"], "node1");
  EXPECT_EQ(ctx["executable"], "gemm_bench");
  EXPECT_EQ(ctx["num_cpus"], 16);
  EXPECT_TRUE(ctx["caches"].is_array());
  EXPECT_EQ(doc["benchmarks"].size(), 5u);
}

TEST(GbenchJson, ContextCarriesEnvironmentAndSummaryInOrder) {
  const Json doc = parse_json(to_gbench_json(sample_report()));
  const Json& redline = doc["context"]["redline"];
  EXPECT_EQ(redline["tool"], "gemm_bench");
  EXPECT_EQ(redline["run_id"], "20261122T123456Z-node1-42");
  EXPECT_EQ(redline["environment"]["git_sha"], "abcdef123456");
  EXPECT_EQ(redline["environment"]["host"], "node1");
  EXPECT_EQ(redline["environment"]["variables"]["NCCL_DEBUG"], "INFO");
  const Json& summary = redline["summary"];
  ASSERT_EQ(summary.size(), 2u);
  EXPECT_EQ(summary.begin().key(), "saturation_batch");
  EXPECT_EQ(summary.begin().value(), "64 (1234 samples_per_s)");
  EXPECT_EQ(std::next(summary.begin()).key(), "recommended_batch");
  EXPECT_EQ(std::next(summary.begin()).value(), "64");
}

TEST(GbenchJson, TimeMetricBecomesRealTimeWithItsUnit) {
  const Json doc = parse_json(to_gbench_json(sample_report()));
  const Json& first = doc["benchmarks"][0];
  EXPECT_EQ(first["name"], "gemm_bench/m=4096/dtype=bf16");
  EXPECT_EQ(first["run_name"], "gemm_bench/m=4096/dtype=bf16");
  EXPECT_EQ(first["run_type"], "iteration");
  EXPECT_EQ(first["real_time"], 12.5);
  EXPECT_EQ(first["cpu_time"], 12.5);
  EXPECT_EQ(first["time_unit"], "us");
  EXPECT_EQ(first["iterations"], 1);

  const Json& ms = doc["benchmarks"][3];
  EXPECT_EQ(ms["real_time"], 3.25);
  EXPECT_EQ(ms["time_unit"], "ms");
}

// batch_sweep's rows: the user's metric, and the trial's wall time beside it.
Report trial_report(const std::vector<double>& samples_per_s, const std::vector<double>& wall_s) {
  Report report;
  report.tool = "batch_sweep";
  report.time_metric = "samples_per_s";
  for (std::size_t i = 0; i < samples_per_s.size(); ++i) {
    Row row;
    row.param("batch_size", std::to_string(8 << i));
    row.metric("samples_per_s", samples_per_s[i]).metric("step_time_ms", 1e3 * wall_s[i]).metric("trial_time_s", wall_s[i]);
    report.rows.push_back(row);
  }
  return report;
}

TEST(GbenchJson, ARateTimeMetricBecomesTheTimePerItem) {
  Report report = trial_report({3200, 6400}, {1.5, 2.5});
  Row oom;
  oom.param("batch_size", "32").metric("samples_per_s", std::nan("")).metric("step_time_ms", std::nan(""));
  oom.status = RowStatus::oom;
  report.rows.push_back(oom);
  const Json doc = parse_json(to_gbench_json(report));
  EXPECT_EQ(doc["context"]["redline"]["time_metric"], "samples_per_s");
  const Json& b = doc["benchmarks"];
  EXPECT_DOUBLE_EQ(b[0]["real_time"].get<double>(), 312.5);  // 1e6 us / 3200, not the step's 1500 ms
  EXPECT_DOUBLE_EQ(b[0]["cpu_time"].get<double>(), 312.5);
  EXPECT_EQ(b[0]["time_unit"], "us");
  EXPECT_DOUBLE_EQ(b[1]["real_time"].get<double>(), 156.25);
  EXPECT_EQ(b[0]["samples_per_s"], 3200);  // the metric itself rides along as a counter
  // Not measured: 0 in the same unit, so compare.py keeps pairing the name's runs.
  EXPECT_EQ(b[2]["real_time"], 0);
  EXPECT_EQ(b[2]["time_unit"], "us");
  EXPECT_TRUE(b[2]["error_occurred"]);
}

TEST(GbenchJson, ATimeTimeMetricIsTakenAsItIs) {
  Report report = trial_report({3200}, {1.5});
  report.rows[0].metric("gpu_time_us", 250);
  report.time_metric = "gpu_time_us";  // a step time from the trainer's own log, say
  const Json doc = parse_json(to_gbench_json(report));
  EXPECT_EQ(doc["benchmarks"][0]["real_time"], 250);
  EXPECT_EQ(doc["benchmarks"][0]["time_unit"], "us");
}

TEST(GbenchJson, CompareReadsNoChangeWhereTheMetricIsTheSame) {
  // Two runs with the same samples_per_s at every batch; the second's trials
  // took longer (start-up, a busy node): compare.py's logic must read 0 for
  // every benchmark and overall.
  const Json first = parse_json(to_gbench_json(trial_report({3200, 6400, 6400}, {1.5, 2.5, 4.0})));
  const Json second = parse_json(to_gbench_json(trial_report({3200, 6400, 6400}, {8.9, 2.6, 4.4})));
  const auto changes = testing::gbench_compare(first, second);
  ASSERT_EQ(changes.size(), 4u);  // three batch sizes and the geometric mean
  EXPECT_EQ(changes.back().name, "OVERALL_GEOMEAN");
  for (const auto& c : changes) {
    EXPECT_EQ(c.time, 0) << c.name;
    EXPECT_EQ(c.cpu, 0) << c.name;
  }
  // A slower metric reads as a longer time: 6400 -> 3200 samples/s is +100%.
  const Json slower = parse_json(to_gbench_json(trial_report({3200, 3200, 6400}, {1.5, 2.5, 4.0})));
  EXPECT_DOUBLE_EQ(testing::gbench_compare(first, slower)[1].time, 1.0);
  // Without the declared metric the wall time would be compared (the issue's +495%).
  Report undeclared = trial_report({3200, 6400, 6400}, {1.5, 2.5, 4.0});
  undeclared.time_metric.clear();
  Report undeclared_later = trial_report({3200, 6400, 6400}, {8.9, 2.6, 4.4});
  undeclared_later.time_metric.clear();
  const auto wall = testing::gbench_compare(parse_json(to_gbench_json(undeclared)),
                                            parse_json(to_gbench_json(undeclared_later)));
  EXPECT_NEAR(wall[0].time, 8.9 / 1.5 - 1, 1e-12);
}

TEST(GbenchJson, MetricsParamsStatusAndKeyRideAlong) {
  const Json doc = parse_json(to_gbench_json(sample_report()));
  const Json& first = doc["benchmarks"][0];
  EXPECT_EQ(first["tflops"], 700.25);
  EXPECT_EQ(first["time_us"], 12.5);
  EXPECT_EQ(first["m"], "4096");
  EXPECT_EQ(first["dtype"], "bf16");
  EXPECT_EQ(first["case_key"], "m=4096;dtype=bf16");
  EXPECT_EQ(first["status"], "ok");
}

TEST(GbenchJson, NamesOfGoogleBenchmarkFieldsArePrefixedNotDuplicated) {
  Report report = sample_report();
  report.rows.resize(1);
  report.rows[0].param("threads", "8").metric("iterations", 42);
  // parse_json rejects duplicate keys, so parsing is half the check.
  const Json doc = parse_json(to_gbench_json(report));
  const Json& first = doc["benchmarks"][0];
  EXPECT_EQ(first["param_threads"], "8");
  EXPECT_EQ(first["metric_iterations"], 42);
  EXPECT_EQ(first["threads"], 1);
  EXPECT_EQ(first["iterations"], 1);
}

TEST(GbenchJson, RepetitionsCountRowsOfTheSameCase) {
  const Json doc = parse_json(to_gbench_json(sample_report()));
  const Json& b = doc["benchmarks"];
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(b[i]["repetitions"], 3) << i;
    EXPECT_EQ(b[i]["repetition_index"], static_cast<double>(i)) << i;
    EXPECT_EQ(b[i]["real_time"], 12.5 + static_cast<double>(i)) << i;
  }
  EXPECT_EQ(b[3]["repetitions"], 1);
  EXPECT_EQ(b[4]["repetitions"], 1);
}

TEST(GbenchJson, NonOkRowsCarryErrorOccurred) {
  const Json doc = parse_json(to_gbench_json(sample_report()));
  const Json& b = doc["benchmarks"];
  for (std::size_t i = 0; i < 4; ++i) EXPECT_FALSE(b[i].contains("error_occurred")) << i;
  const Json& oom = b[4];
  ASSERT_TRUE(oom.contains("error_occurred"));
  EXPECT_TRUE(oom["error_occurred"].is_boolean());
  EXPECT_TRUE(oom["error_occurred"]);
  EXPECT_EQ(oom["error_message"], "oom: CUDA out of memory");
  EXPECT_EQ(oom["status"], "oom");
  // Not measured: null, never a made-up number.
  EXPECT_TRUE(oom["tflops"].is_null());
  EXPECT_TRUE(oom["time_us"].is_null());
}

TEST(GbenchJson, StringsAreEscaped) {
  Report report = sample_report();
  const std::string nasty = "say \"hi\"\nback\\slash\ttab\x01\x1f end";
  report.rows[4].note = nasty;
  report.summary.emplace_back("key with \"quotes\"", "line1\nline2");
  report.env.host = "host\"1";
  const std::string text = to_gbench_json(report);
  EXPECT_NE(text.find(R"(say \"hi\"\nback\\slash\ttab\u0001\u001f end)"), std::string::npos) << text;
  const Json doc = parse_json(text);  // strict: a raw control character would throw
  EXPECT_EQ(doc["benchmarks"][4]["note"], nasty);
  EXPECT_EQ(doc["benchmarks"][4]["error_message"], "oom: " + nasty);
  EXPECT_EQ(doc["context"]["host_name"], "host\"1");
  EXPECT_EQ(doc["context"]["redline"]["summary"]["key with \"quotes\""], "line1\nline2");
}

TEST(GbenchJson, EmptyReport) {
  Report report;
  report.tool = "t";
  const Json doc = parse_json(to_gbench_json(report));
  EXPECT_TRUE(doc["benchmarks"].is_array());
  EXPECT_TRUE(doc["benchmarks"].empty());
  EXPECT_TRUE(doc["context"]["redline"]["summary"].empty());
  EXPECT_FALSE(doc["context"]["redline"].contains("charts"));  // the tool computed none
}

// The charts a tool computed ride under context.redline, for scripts/plot.
TEST(GbenchJson, ChartsUnderContextRedline) {
  Report report = sample_report();
  SweepChart chart;
  chart.title = "gemm_bench: dtype=bf16";
  chart.x = "m";
  chart.log_x = true;
  chart.x_label = "m (log2 scale)";
  chart.metric = "tflops";
  chart.unit = "TFLOPS";
  chart.y_label = "tflops (TFLOPS)";
  chart.series = {{"measured tflops", {{4096, 700.25}, {8192, 650}}, false},
                  {"model prediction", {{4096, 710}, {8192, 705.5}}, true}};
  chart.markers = {{4096, 700.25, "90% of best: m 4K"}};
  chart.findings = {"best m 4K (700 TFLOPS)"};
  report.charts = std::vector<SweepChart>{chart};

  const Json charts = parse_json(to_gbench_json(report))["context"]["redline"]["charts"];
  ASSERT_EQ(charts.size(), 1u);
  const Json& c = charts[0];
  EXPECT_EQ(c["title"], "gemm_bench: dtype=bf16");
  EXPECT_EQ(c["x"], (Json{{"parameter", "m"}, {"scale", "log2"}, {"label", "m (log2 scale)"}}));
  EXPECT_EQ(c["y"], (Json{{"metric", "tflops"}, {"unit", "TFLOPS"}, {"label", "tflops (TFLOPS)"}}));
  ASSERT_EQ(c["series"].size(), 2u);
  EXPECT_EQ(c["series"][0]["name"], "measured tflops");
  EXPECT_EQ(c["series"][0]["prediction"], false);
  EXPECT_EQ(c["series"][0]["points"], Json::parse("[[4096, 700.25], [8192, 650]]"));
  EXPECT_EQ(c["series"][1]["prediction"], true);
  EXPECT_EQ(c["series"][1]["points"], Json::parse("[[4096, 710], [8192, 705.5]]"));
  EXPECT_EQ(c["markers"], Json::parse(R"([{"x": 4096, "y": 700.25, "label": "90% of best: m 4K"}])"));
  EXPECT_EQ(c["findings"], Json::array({"best m 4K (700 TFLOPS)"}));

  report.charts = std::vector<SweepChart>{};  // computed, nothing to chart: an empty list, not no key
  EXPECT_EQ(parse_json(to_gbench_json(report))["context"]["redline"]["charts"], Json::array());
}

TEST(EnvironmentJson, UnknownReadingsAreNull) {
  Environment env = sample_report().env;
  GpuInfo unknown;
  unknown.index = 1;
  unknown.name = "NVIDIA H200";
  env.gpus.push_back(unknown);
  const Json doc = parse_json(environment_json(env));
  const Json& gpus = doc["gpus"];
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0]["name"], "NVIDIA H200");
  EXPECT_EQ(gpus[0]["memory_bytes"], static_cast<double>(150ull << 30));
  EXPECT_EQ(gpus[0]["sm_clock_mhz"], 1980);
  EXPECT_EQ(gpus[0]["power_w"], 412.5);
  EXPECT_TRUE(gpus[0]["temperature_c"].is_null());
  EXPECT_EQ(gpus[1]["index"], 1);
  for (const char* reading : {"sm_clock_mhz", "max_sm_clock_mhz", "temperature_c", "power_w", "throttle_reasons",
                              "sm_count", "l2_bytes", "memory_bytes"})
    EXPECT_TRUE(gpus[1][reading].is_null()) << reading;
  EXPECT_EQ(doc["gpu_source"], "nvml");
  EXPECT_EQ(doc["cpu_count"], 16);
}

TEST(JsonQuote, EscapesPerRfc8259) {
  EXPECT_EQ(json_quote("plain"), "\"plain\"");
  EXPECT_EQ(json_quote("a\"b"), "\"a\\\"b\"");
  EXPECT_EQ(json_quote("a\\b"), "\"a\\\\b\"");
  EXPECT_EQ(json_quote("\n\r\t"), "\"\\n\\r\\t\"");
  EXPECT_EQ(json_quote(std::string("\x00\x1f", 2)), "\"\\u0000\\u001f\"");
  EXPECT_EQ(json_quote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // UTF-8 passes through
}

// Python's json refuses a file that is not UTF-8: a stray byte (a trainer's
// Latin-1 log line, a truncated sequence) becomes U+FFFD, well-formed
// sequences pass, and overlong or surrogate encodings count as stray.
TEST(JsonQuote, BytesThatAreNotUtf8BecomeTheReplacementCharacter) {
  EXPECT_EQ(json_quote("caf\xe9"), "\"caf\\ufffd\"");
  EXPECT_EQ(json_quote("\xc3"), "\"\\ufffd\"");                  // truncated
  EXPECT_EQ(json_quote("\xc0\xaf"), "\"\\ufffd\\ufffd\"");     // overlong '/'
  EXPECT_EQ(json_quote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // a surrogate
  EXPECT_EQ(json_quote("\xf0\x9f\x98\x80 \xe2\x82\xac"), "\"\xf0\x9f\x98\x80 \xe2\x82\xac\"");
  EXPECT_NO_THROW(parse_json(json_quote("a\xff\xfe b")));
}

// json_unquote_body undoes every escape json_quote makes, and \uXXXX beyond.
TEST(JsonUnquote, UndoesEveryEscape) {
  const std::string nasty = std::string("say \"hi\"\nback\\slash\ttab\r\x01\x1f caf\xc3\xa9 ") + '\0' + "end";
  const std::string quoted = json_quote(nasty);
  EXPECT_EQ(json_unquote_body(quoted.substr(1, quoted.size() - 2)), nasty);
  EXPECT_EQ(json_unquote_body("\\u00e9\\u20ac\\/"), "\xc3\xa9\xe2\x82\xac/");
  EXPECT_EQ(json_unquote_body("\\u12"), "\\u12");  // not four hex digits: kept
}

// The summary read back from a written JSON is the text written: escapes
// decoded, not dropped ("\n" came back as "n").
TEST(RecordedSummary, ReadsBackTheTextWritten) {
  redline::testing::TempDir dir;
  Report report = sample_report();
  report.summary = {{"recommendation", "line1\nline2 \"quoted\" back\\slash\ttab caf\xc3\xa9"}, {"key \"q\"", "v"}};
  const fs::path path = dir / "r.json";
  std::ofstream(path) << to_gbench_json(report);
  const auto members = recorded_summary(path);
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members[0], report.summary[0]);
  EXPECT_EQ(members[1], report.summary[1]);
}

TEST(JsonWriter, NonFiniteNumbersAreNull) {
  JsonWriter w;
  w.begin_array().value(std::nan("")).value(INFINITY).value(1.5).value(std::int64_t{-3}).value(true).null();
  w.end_array();
  const Json doc = parse_json(w.str());
  ASSERT_EQ(doc.size(), 6u);
  EXPECT_TRUE(doc[0].is_null());
  EXPECT_TRUE(doc[1].is_null());
  EXPECT_EQ(doc[2], 1.5);
  EXPECT_EQ(doc[3], -3);
  EXPECT_TRUE(doc[4]);
  EXPECT_TRUE(doc[5].is_null());
}

TEST(GbenchJson, PythonJsonModuleAcceptsIt) {
  if (std::system("python3 -c 'import json' >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 is not available";
  Report report = sample_report();
  report.rows[4].note = "quote \" newline \n control \x02 backslash \\";
  const testing::TempDir dir("gbench_json_test");
  const fs::path path = dir / "report.json";
  {
    std::ofstream out(path, std::ios::binary);
    out << to_gbench_json(report);
  }
  // parse_constant rejects NaN/Infinity, which Python would otherwise accept.
  const std::string cmd =
      "python3 -c 'import json,sys; d=json.load(open(sys.argv[1]), parse_constant=lambda c: sys.exit(3)); "
      "sys.exit(0 if len(d[\"benchmarks\"]) == 5 else 4)' " +
      path.string();
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << cmd;
}

}  // namespace
}  // namespace redline
