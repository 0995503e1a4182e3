// What many tests share: a fresh temporary folder per test, and
// EXPECT_CONTAINS for messages (gtest alone, no gmock).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

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

}  // namespace redline::testing

// `text` contains `part`; on failure, prints both.
#define EXPECT_CONTAINS(text, part)                                                              \
  do {                                                                                           \
    const std::string text_ = (text), part_ = (part);                                            \
    EXPECT_NE(text_.find(part_), std::string::npos) << "\"" << part_ << "\" not in: " << text_; \
  } while (0)

// `text` does not contain `part`.
#define EXPECT_NOT_CONTAINS(text, part)                                                      \
  do {                                                                                       \
    const std::string text_ = (text), part_ = (part);                                        \
    EXPECT_EQ(text_.find(part_), std::string::npos) << "\"" << part_ << "\" in: " << text_; \
  } while (0)
