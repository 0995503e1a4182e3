// redline profile end to end where it can run here: bad input is exit 2
// naming the flag and the value, printed once; without a GPU it exits 77
// with the reason (on a GPU machine, a program that never uses CUDA leaves
// no trace, and the profile says so).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "harness/core/child_process.hpp"
#include "tests/support.hpp"

using namespace redline;

namespace {

class ProfileCommand : public redline::testing::TempDirTest {
 protected:
  ChildResult profile(std::vector<std::string> args) const {
    ChildSpec spec;
    spec.argv = {REDLINE_BIN, "profile"};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.timeout_seconds = 60;
    return run_child(spec);
  }
  static std::size_t count(const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
  }
};

TEST_F(ProfileCommand, BadInputNamesTheFlagOnce) {
  const std::string csv = (dir_ / "p.csv").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--csv", csv}, "COMMAND: give the program to profile after --"},
      {{"--skip", "x", "--csv", csv, "--", "true"}, "--skip 'x'"},
      {{"--steps", "-1", "--csv", csv, "--", "true"}, "--steps '-1'"},
      {{"--step-regex", "(", "--csv", csv, "--", "true"}, "--step-regex '(': is not a regular expression"},
      {{"--step-range", "[", "--csv", csv, "--", "true"}, "--step-range '['"},
      {{"--ceilings", (dir_ / "missing").string(), "--csv", csv, "--", "true"}, "--ceilings"},
      {{"--csv", dir_.string(), "--", "true"}, "is a directory"}};
  for (const auto& [args, names] : cases) {
    const ChildResult r = profile(args);
    EXPECT_EQ(r.exit_code, 2) << names << "\n" << r.output;
    EXPECT_CONTAINS(r.output, names);
    EXPECT_EQ(count(r.output, names), 1u) << r.output;
    EXPECT_FALSE(std::filesystem::exists(csv)) << names;
  }
}

TEST_F(ProfileCommand, SaysWhyItCannotRunHere) {
  const std::string csv = (dir_ / "p.csv").string();
  const ChildResult r = profile({"--csv", csv, "--", "true"});
  if (r.exit_code == 77) {
    EXPECT_TRUE(r.output.find("no GPU to profile on") != std::string::npos ||
                r.output.find("libredline_profile_injection.so") != std::string::npos)
        << r.output;
    EXPECT_CONTAINS(r.output, "skipped: ");
  } else {
    // A GPU machine: `true` never loads CUDA, so no trace; nothing is written.
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_CONTAINS(r.output, "the program wrote no trace");
  }
  EXPECT_FALSE(std::filesystem::exists(csv));
}

}  // namespace
