// The Google Benchmark-format JSON report: parsed back with a small strict
// RFC 8259 parser (below) and, where python3 exists, with Python's json
// module, then checked field by field.
#include "harness/report/gbench_json.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/report/json_writer.hpp"
#include "harness/report/report.hpp"

namespace redline {
namespace {

namespace fs = std::filesystem;

// ---- a minimal strict JSON reader, enough to check the report's structure --

struct Json {
  enum class Type { null, boolean, number, string, array, object } type = Type::null;
  bool b = false;
  double n = 0;
  std::string s;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  bool has(const std::string& key) const {
    for (const auto& [k, v] : members)
      if (k == key) return true;
    return false;
  }
  const Json& operator[](const std::string& key) const {
    if (type != Type::object) throw std::runtime_error("not an object looking up " + key);
    for (const auto& [k, v] : members)
      if (k == key) return v;
    throw std::runtime_error("no key " + key);
  }
  const Json& operator[](std::size_t i) const {
    if (type != Type::array || i >= items.size()) throw std::runtime_error("bad array index");
    return items[i];
  }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : t_(text) {}
  Json parse() {
    Json v = value();
    ws();
    if (i_ != t_.size()) fail("trailing text");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) {
    throw std::runtime_error("JSON error at offset " + std::to_string(i_) + ": " + why);
  }
  void ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\r' || t_[i_] == '\t')) ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ < t_.size() && t_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool word(const char* w) {
    const std::string s(w);
    if (t_.compare(i_, s.size(), s) != 0) return false;
    i_ += s.size();
    return true;
  }
  Json value() {
    ws();
    if (i_ >= t_.size()) fail("unexpected end");
    Json v;
    const char c = t_[i_];
    if (c == '{') {
      ++i_;
      v.type = Json::Type::object;
      if (eat('}')) return v;
      do {
        ws();
        std::string key = string();
        for (const auto& [k, unused] : v.members)
          if (k == key) fail("duplicate key " + key);
        expect(':');
        v.members.emplace_back(std::move(key), value());
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++i_;
      v.type = Json::Type::array;
      if (eat(']')) return v;
      do v.items.push_back(value());
      while (eat(','));
      expect(']');
    } else if (c == '"') {
      v.type = Json::Type::string;
      v.s = string();
    } else if (word("true")) {
      v.type = Json::Type::boolean;
      v.b = true;
    } else if (word("false")) {
      v.type = Json::Type::boolean;
    } else if (word("null")) {
      v.type = Json::Type::null;
    } else {
      v.type = Json::Type::number;
      v.n = number();
    }
    return v;
  }
  std::string string() {
    if (i_ >= t_.size() || t_[i_] != '"') fail("expected a string");
    ++i_;
    std::string out;
    for (;;) {
      if (i_ >= t_.size()) fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(t_[i_++]);
      if (c == '"') return out;
      if (c < 0x20) fail("raw control character in a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (i_ >= t_.size()) fail("unterminated escape");
      const char e = t_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (i_ + 4 > t_.size()) fail("short \\u escape");
          const unsigned code = std::stoul(t_.substr(i_, 4), nullptr, 16);
          i_ += 4;
          if (code >= 0x80) fail("test parser handles ASCII \\u escapes only");
          out += static_cast<char>(code);
          break;
        }
        default: fail(std::string("bad escape \\") + e);
      }
    }
  }
  double number() {
    const std::size_t start = i_;
    auto digits = [&] {
      const std::size_t d = i_;
      while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_]))) ++i_;
      return i_ > d;
    };
    if (i_ < t_.size() && t_[i_] == '-') ++i_;
    if (i_ < t_.size() && t_[i_] == '0') ++i_;
    else if (!digits()) fail("not a value");
    if (i_ < t_.size() && t_[i_] == '.') {
      ++i_;
      if (!digits()) fail("digits expected after '.'");
    }
    if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
      ++i_;
      if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-')) ++i_;
      if (!digits()) fail("digits expected in exponent");
    }
    return std::stod(t_.substr(start, i_ - start));
  }
  const std::string& t_;
  std::size_t i_ = 0;
};

Json parse_json(const std::string& text) { return JsonParser(text).parse(); }

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
  oom.status = "oom";
  oom.note = "CUDA out of memory";
  report.rows.push_back(oom);
  report.summary = {{"saturation_batch", "64 (1234 samples_per_s)"}, {"recommended_batch", "64"}};
  return report;
}

TEST(GbenchJson, IsValidJsonWithContextAndBenchmarks) {
  const Json doc = parse_json(to_gbench_json(sample_report()));
  ASSERT_EQ(doc.type, Json::Type::object);
  ASSERT_TRUE(doc.has("context"));
  ASSERT_TRUE(doc.has("benchmarks"));
  const Json& ctx = doc["context"];
  EXPECT_EQ(ctx["date"].s, "2026-11-22T12:34:56Z");
  EXPECT_EQ(ctx["host_name"].s, "node1");
  EXPECT_EQ(ctx["executable"].s, "gemm_bench");
  EXPECT_EQ(ctx["num_cpus"].n, 16);
  EXPECT_EQ(ctx["caches"].type, Json::Type::array);
  EXPECT_EQ(doc["benchmarks"].items.size(), 5u);
}

TEST(GbenchJson, ContextCarriesEnvironmentAndSummaryInOrder) {
  const Json doc = parse_json(to_gbench_json(sample_report()));
  const Json& redline = doc["context"]["redline"];
  EXPECT_EQ(redline["tool"].s, "gemm_bench");
  EXPECT_EQ(redline["run_id"].s, "20261122T123456Z-node1-42");
  EXPECT_EQ(redline["environment"]["git_sha"].s, "abcdef123456");
  EXPECT_EQ(redline["environment"]["host"].s, "node1");
  EXPECT_EQ(redline["environment"]["variables"]["NCCL_DEBUG"].s, "INFO");
  const Json& summary = redline["summary"];
  ASSERT_EQ(summary.members.size(), 2u);
  EXPECT_EQ(summary.members[0].first, "saturation_batch");
  EXPECT_EQ(summary.members[0].second.s, "64 (1234 samples_per_s)");
  EXPECT_EQ(summary.members[1].first, "recommended_batch");
  EXPECT_EQ(summary.members[1].second.s, "64");
}

TEST(GbenchJson, TimeMetricBecomesRealTimeWithItsUnit) {
  const Json doc = parse_json(to_gbench_json(sample_report()));
  const Json& first = doc["benchmarks"][0];
  EXPECT_EQ(first["name"].s, "gemm_bench/m=4096/dtype=bf16");
  EXPECT_EQ(first["run_name"].s, "gemm_bench/m=4096/dtype=bf16");
  EXPECT_EQ(first["run_type"].s, "iteration");
  EXPECT_EQ(first["real_time"].n, 12.5);
  EXPECT_EQ(first["cpu_time"].n, 12.5);
  EXPECT_EQ(first["time_unit"].s, "us");
  EXPECT_EQ(first["iterations"].n, 1);

  const Json& ms = doc["benchmarks"][3];
  EXPECT_EQ(ms["real_time"].n, 3.25);
  EXPECT_EQ(ms["time_unit"].s, "ms");
}

TEST(GbenchJson, MetricsParamsStatusAndKeyRideAlong) {
  const Json doc = parse_json(to_gbench_json(sample_report()));
  const Json& first = doc["benchmarks"][0];
  EXPECT_EQ(first["tflops"].n, 700.25);
  EXPECT_EQ(first["time_us"].n, 12.5);
  EXPECT_EQ(first["m"].s, "4096");
  EXPECT_EQ(first["dtype"].s, "bf16");
  EXPECT_EQ(first["case_key"].s, "m=4096;dtype=bf16");
  EXPECT_EQ(first["status"].s, "ok");
}

TEST(GbenchJson, NamesOfGoogleBenchmarkFieldsArePrefixedNotDuplicated) {
  Report report = sample_report();
  report.rows.resize(1);
  report.rows[0].param("threads", "8").metric("iterations", 42);
  // The strict parser rejects duplicate keys, so parsing is half the check.
  const Json doc = parse_json(to_gbench_json(report));
  const Json& first = doc["benchmarks"][0];
  EXPECT_EQ(first["param_threads"].s, "8");
  EXPECT_EQ(first["metric_iterations"].n, 42);
  EXPECT_EQ(first["threads"].n, 1);
  EXPECT_EQ(first["iterations"].n, 1);
}

TEST(GbenchJson, RepetitionsCountRowsOfTheSameCase) {
  const Json doc = parse_json(to_gbench_json(sample_report()));
  const Json& b = doc["benchmarks"];
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(b[i]["repetitions"].n, 3) << i;
    EXPECT_EQ(b[i]["repetition_index"].n, static_cast<double>(i)) << i;
    EXPECT_EQ(b[i]["real_time"].n, 12.5 + static_cast<double>(i)) << i;
  }
  EXPECT_EQ(b[3]["repetitions"].n, 1);
  EXPECT_EQ(b[4]["repetitions"].n, 1);
}

TEST(GbenchJson, NonOkRowsCarryErrorOccurred) {
  const Json doc = parse_json(to_gbench_json(sample_report()));
  const Json& b = doc["benchmarks"];
  for (std::size_t i = 0; i < 4; ++i) EXPECT_FALSE(b[i].has("error_occurred")) << i;
  const Json& oom = b[4];
  ASSERT_TRUE(oom.has("error_occurred"));
  EXPECT_EQ(oom["error_occurred"].type, Json::Type::boolean);
  EXPECT_TRUE(oom["error_occurred"].b);
  EXPECT_EQ(oom["error_message"].s, "oom: CUDA out of memory");
  EXPECT_EQ(oom["status"].s, "oom");
  // Not measured: null, never a made-up number.
  EXPECT_EQ(oom["tflops"].type, Json::Type::null);
  EXPECT_EQ(oom["time_us"].type, Json::Type::null);
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
  EXPECT_EQ(doc["benchmarks"][4]["note"].s, nasty);
  EXPECT_EQ(doc["benchmarks"][4]["error_message"].s, "oom: " + nasty);
  EXPECT_EQ(doc["context"]["host_name"].s, "host\"1");
  EXPECT_EQ(doc["context"]["redline"]["summary"]["key with \"quotes\""].s, "line1\nline2");
}

TEST(GbenchJson, EmptyReport) {
  Report report;
  report.tool = "t";
  const Json doc = parse_json(to_gbench_json(report));
  EXPECT_TRUE(doc["benchmarks"].items.empty());
  EXPECT_EQ(doc["benchmarks"].type, Json::Type::array);
  EXPECT_TRUE(doc["context"]["redline"]["summary"].members.empty());
}

TEST(EnvironmentJson, UnknownReadingsAreNull) {
  Environment env = sample_report().env;
  GpuInfo unknown;
  unknown.index = 1;
  unknown.name = "NVIDIA H200";
  env.gpus.push_back(unknown);
  const Json doc = parse_json(environment_json(env));
  const Json& gpus = doc["gpus"];
  ASSERT_EQ(gpus.items.size(), 2u);
  EXPECT_EQ(gpus[0]["name"].s, "NVIDIA H200");
  EXPECT_EQ(gpus[0]["memory_bytes"].n, static_cast<double>(150ull << 30));
  EXPECT_EQ(gpus[0]["sm_clock_mhz"].n, 1980);
  EXPECT_EQ(gpus[0]["power_w"].n, 412.5);
  EXPECT_EQ(gpus[0]["temperature_c"].type, Json::Type::null);
  EXPECT_EQ(gpus[1]["index"].n, 1);
  for (const char* reading : {"sm_clock_mhz", "max_sm_clock_mhz", "temperature_c", "power_w", "throttle_reasons",
                              "sm_count", "l2_bytes", "memory_bytes"})
    EXPECT_EQ(gpus[1][reading].type, Json::Type::null) << reading;
  EXPECT_EQ(doc["gpu_source"].s, "nvml");
  EXPECT_EQ(doc["cpu_count"].n, 16);
}

TEST(JsonQuote, EscapesPerRfc8259) {
  EXPECT_EQ(json_quote("plain"), "\"plain\"");
  EXPECT_EQ(json_quote("a\"b"), "\"a\\\"b\"");
  EXPECT_EQ(json_quote("a\\b"), "\"a\\\\b\"");
  EXPECT_EQ(json_quote("\n\r\t"), "\"\\n\\r\\t\"");
  EXPECT_EQ(json_quote(std::string("\x00\x1f", 2)), "\"\\u0000\\u001f\"");
  EXPECT_EQ(json_quote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // UTF-8 passes through
}

TEST(JsonWriter, NonFiniteNumbersAreNull) {
  JsonWriter w;
  w.begin_array().value(std::nan("")).value(INFINITY).value(1.5).value(std::int64_t{-3}).value(true).null();
  w.end_array();
  const Json doc = parse_json(w.str());
  ASSERT_EQ(doc.items.size(), 6u);
  EXPECT_EQ(doc[0].type, Json::Type::null);
  EXPECT_EQ(doc[1].type, Json::Type::null);
  EXPECT_EQ(doc[2].n, 1.5);
  EXPECT_EQ(doc[3].n, -3);
  EXPECT_TRUE(doc[4].b);
  EXPECT_EQ(doc[5].type, Json::Type::null);
}

TEST(GbenchJson, PythonJsonModuleAcceptsIt) {
  if (std::system("python3 -c 'import json' >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 is not available";
  Report report = sample_report();
  report.rows[4].note = "quote \" newline \n control \x02 backslash \\";
  const fs::path path = fs::temp_directory_path() / ("redline_gbench_json_test_" + std::to_string(getpid()) + ".json");
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
  fs::remove(path);
  EXPECT_EQ(rc, 0) << cmd;
}

}  // namespace
}  // namespace redline
