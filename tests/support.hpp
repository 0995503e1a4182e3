// What many tests share: a fresh temporary folder per test, a fixture that
// runs a tool's real binary, and EXPECT_CONTAINS for messages (gtest alone,
// no gmock).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/core/child_process.hpp"

namespace redline::testing {

// A new, empty folder under the system's temporary folder (mkdtemp, so two
// tests or two ctest processes never share one), removed with everything in
// it when the object goes.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "redline_test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + ".XXXXXX")).string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// A fixture whose every test gets its own TempDir, named after the test, in
// `dir_`. A fixture that needs more set-up overrides SetUp and calls
// TempDirTest::SetUp() first.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    temp_ = std::make_unique<TempDir>(std::string(info->test_suite_name()) + "." + info->name());
    dir_ = temp_->path();
  }
  void TearDown() override { temp_.reset(); }

  std::filesystem::path dir_;

 private:
  std::unique_ptr<TempDir> temp_;
};

// A tool's end-to-end tests: its real binary (binary(), the path CMake
// passes in) run as a child process with a temporary folder for its reports.
class ToolTest : public TempDirTest {
 protected:
  virtual const char* binary() const = 0;

  ChildResult run(std::vector<std::string> args, double timeout_seconds = 60) const {
    ChildSpec spec;
    spec.argv = {binary()};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.timeout_seconds = timeout_seconds;
    return run_child(spec);
  }

  // Bad input: exit 2, the message naming `names` (the flag and the value),
  // and no report written.
  void expect_usage_error(std::vector<std::string> args, const std::string& names) const;
};

// A file's whole content, byte for byte ("" when it cannot be opened).
inline std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

}  // namespace redline::testing

// `text` contains `part`; on failure, prints both.
#define EXPECT_CONTAINS(text, part)                                                              \
  do {                                                                                           \
    const std::string text_ = (text), part_ = (part);                                            \
    EXPECT_NE(text_.find(part_), std::string::npos) << "\"" << part_ << "\" not in: " << text_; \
  } while (0)

// `statement` throws `type` whose message holds `part`.
#define EXPECT_THROW_WITH(statement, type, part)    \
  do {                                              \
    try {                                           \
      statement;                                    \
      ADD_FAILURE() << "no exception: " #statement; \
    } catch (const type& e) {                       \
      EXPECT_CONTAINS(e.what(), part);              \
    }                                               \
  } while (0)

// `text` does not contain `part`.
#define EXPECT_NOT_CONTAINS(text, part)                                                      \
  do {                                                                                       \
    const std::string text_ = (text), part_ = (part);                                        \
    EXPECT_EQ(text_.find(part_), std::string::npos) << "\"" << part_ << "\" in: " << text_; \
  } while (0)

inline void redline::testing::ToolTest::expect_usage_error(std::vector<std::string> args,
                                                           const std::string& names) const {
  const std::filesystem::path report = dir_ / "out.csv";
  args.insert(args.end(), {"--csv", report.string()});
  const ChildResult child = run(args);
  EXPECT_EQ(child.exit_code, 2) << child.output;
  EXPECT_CONTAINS(child.output, names);
  EXPECT_FALSE(std::filesystem::exists(report));
}
