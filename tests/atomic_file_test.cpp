// Atomic result files on the real file system: whole content or the old file,
// never a torn one, and no temporary files left behind.
#include "harness/core/atomic_file.hpp"
#include "harness/report/output.hpp"
#include "harness/core/usage_error.hpp"
#include "tests/support.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace redline {
namespace {

namespace fs = std::filesystem;
using redline::testing::read_all;

void write_plain(const fs::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string write_error(const fs::path& path, const std::string& content) {
  try {
    write_file_atomically(path, content);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected writing " << path << " to fail";
  return "";
}

class AtomicFileTest : public redline::testing::TempDirTest {};

TEST_F(AtomicFileTest, WritesTheContent) {
  const fs::path path = dir_ / "out.csv";
  const std::string content = "a,b\r\n1,2\r\n" + std::string(100000, 'x') + std::string("\0binary\0", 8);
  write_file_atomically(path, content);
  EXPECT_EQ(read_all(path), content);
  EXPECT_EQ(names_in(dir_), (std::vector<std::string>{"out.csv"}));
}

TEST_F(AtomicFileTest, WritesAnEmptyFile) {
  const fs::path path = dir_ / "empty.csv";
  write_file_atomically(path, "");
  ASSERT_TRUE(fs::exists(path));
  EXPECT_EQ(fs::file_size(path), 0u);
}

TEST_F(AtomicFileTest, OverwriteReplacesTheFileRatherThanTruncatingIt) {
  const fs::path path = dir_ / "report.json";
  write_file_atomically(path, "old content");
  // A reader that opened the old file keeps seeing the whole old file: the
  // new content arrives as a new inode renamed over it, not written in place.
  std::ifstream reader(path, std::ios::binary);
  ASSERT_TRUE(reader);
  struct stat before {};
  ASSERT_EQ(stat(path.c_str(), &before), 0);

  write_file_atomically(path, "new");
  EXPECT_EQ(read_all(path), "new");
  struct stat after {};
  ASSERT_EQ(stat(path.c_str(), &after), 0);
  EXPECT_NE(before.st_ino, after.st_ino);
  std::ostringstream seen;
  seen << reader.rdbuf();
  EXPECT_EQ(seen.str(), "old content");
  EXPECT_EQ(names_in(dir_), (std::vector<std::string>{"report.json"}));
}

TEST_F(AtomicFileTest, CreatesMissingParentDirectories) {
  const fs::path path = dir_ / "runs" / "2026-11-22" / "node1" / "results.csv";
  write_file_atomically(path, "x\n");
  EXPECT_EQ(read_all(path), "x\n");
  EXPECT_EQ(names_in(path.parent_path()), (std::vector<std::string>{"results.csv"}));
}

TEST_F(AtomicFileTest, RelativePathInTheCurrentDirectory) {
  const fs::path old_cwd = fs::current_path();
  fs::current_path(dir_);
  try {
    write_file_atomically("relative.txt", "here");
  } catch (...) {
    fs::current_path(old_cwd);
    throw;
  }
  fs::current_path(old_cwd);
  EXPECT_EQ(read_all(dir_ / "relative.txt"), "here");
  EXPECT_EQ(names_in(dir_), (std::vector<std::string>{"relative.txt"}));
}

TEST_F(AtomicFileTest, ParentThatIsAFileFailsNamingThePath) {
  // Permission bits do not stop root; a regular file in the way of the
  // directory stops everyone.
  write_plain(dir_ / "file.txt", "I am a file");
  const fs::path path = dir_ / "file.txt" / "sub" / "out.csv";
  const std::string what = write_error(path, "data");
  EXPECT_CONTAINS(what, path.string());
  EXPECT_CONTAINS(what, "create directory");
  EXPECT_EQ(read_all(dir_ / "file.txt"), "I am a file");
  EXPECT_EQ(names_in(dir_), (std::vector<std::string>{"file.txt"}));
}

TEST_F(AtomicFileTest, FailedWriteLeavesTheOldFileIntact) {
  const fs::path path = dir_ / "results.csv";
  write_file_atomically(path, "old,complete\r\n");
  // A directory where the temporary file must go makes creating it fail,
  // whatever our privileges.
  const fs::path blocker = temporary_name_for(path);
  fs::create_directory(blocker);
  const std::string what = write_error(path, "new,content\r\n");
  EXPECT_CONTAINS(what, path.string());
  EXPECT_EQ(read_all(path), "old,complete\r\n");
  fs::remove(blocker);
  EXPECT_EQ(names_in(dir_), (std::vector<std::string>{"results.csv"}));
}

TEST_F(AtomicFileTest, FailedRenameRemovesTheTemporaryFile) {
  // The target is a non-empty directory: rename fails after the data was
  // written and synced; the temporary file must not be left behind.
  const fs::path path = dir_ / "target";
  fs::create_directories(path / "inside");
  const std::string what = write_error(path, "data");
  EXPECT_CONTAINS(what, path.string());
  EXPECT_CONTAINS(what, "rename");
  EXPECT_EQ(names_in(dir_), (std::vector<std::string>{"target"}));
  EXPECT_TRUE(fs::is_directory(path / "inside"));
}

TEST_F(AtomicFileTest, AppendCreatesThenAppends) {
  const fs::path path = dir_ / "history" / "history.csv";
  append_file_atomically(path, "header\n");
  EXPECT_EQ(read_all(path), "header\n");
  append_file_atomically(path, "row1\n");
  append_file_atomically(path, "row2\nrow3\n");
  EXPECT_EQ(read_all(path), "header\nrow1\nrow2\nrow3\n");
  EXPECT_EQ(names_in(path.parent_path()), (std::vector<std::string>{"history.csv"}));
}

TEST_F(AtomicFileTest, FailedAppendLeavesTheOldFileIntact) {
  const fs::path path = dir_ / "history.csv";
  write_file_atomically(path, "header\nrow1\n");
  const fs::path blocker = temporary_name_for(path);
  fs::create_directory(blocker);
  EXPECT_THROW(append_file_atomically(path, "row2\n"), std::runtime_error);
  EXPECT_EQ(read_all(path), "header\nrow1\n");
  fs::remove(blocker);
}

// --csv/--json are checked before a run, so a report that cannot be written
// fails in a second as bad input, not after an hour of measuring.
TEST_F(AtomicFileTest, OutputPathsAreTriedBeforeTheRun) {
  OutputOptions ok;
  ok.csv_path = (dir_ / "new" / "r.csv").string();
  ok.json_path = (dir_ / "r.json").string();
  EXPECT_NO_THROW(validate_output_paths(ok));
  EXPECT_FALSE(fs::exists(dir_ / "new")) << "the check creates no directory (the write does)";
  EXPECT_EQ(names_in(dir_), std::vector<std::string>{}) << "the probe file is removed";
  EXPECT_FALSE(fs::exists(ok.json_path));

  auto refused = [](const std::string& csv) {
    OutputOptions bad;
    bad.csv_path = csv;
    try {
      validate_output_paths(bad);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  // /proc takes no new files, even from root, so this holds on any Linux.
  EXPECT_EQ(refused("/proc/r.csv").rfind("--csv '/proc/r.csv': cannot be written (cannot create r.csv.tmp.", 0), 0u)
      << refused("/proc/r.csv");
  EXPECT_CONTAINS(refused(dir_.string()), "is a directory");
  // A name that fits but whose temporary name (".tmp.<host>-<pid>" added)
  // does not would fail only at the end: it is refused up front.
  const std::string long_name = (dir_ / (std::string(250, 'r') + ".csv")).string();
  EXPECT_CONTAINS(refused(long_name), "File name too long");
  // A file where a directory must be.
  write_file_atomically(dir_ / "plain", "x");
  EXPECT_CONTAINS(refused((dir_ / "plain" / "sub" / "r.csv").string()), "cannot create its directory");
  EXPECT_CONTAINS(refused((dir_ / "plain" / "r.csv").string()), "is not a directory");

  // Renaming the report over these would replace them with a plain file.
  EXPECT_CONTAINS(refused("/dev/null"), "is not a regular file");
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  EXPECT_CONTAINS(refused((dir_ / "fifo").string()), "is not a regular file");
  fs::create_symlink(dir_ / "plain", dir_ / "link");
  EXPECT_CONTAINS(refused((dir_ / "link").string()), "is a symbolic link");

  auto same_file_refused = [](const std::string& csv, const std::string& json) {
    OutputOptions twice;
    twice.csv_path = csv;
    twice.json_path = json;
    try {
      validate_output_paths(twice);
    } catch (const UsageError& e) {
      return std::string(e.what()).find("is also the --csv file") != std::string::npos;
    }
    return false;
  };
  EXPECT_TRUE(same_file_refused((dir_ / "r.out").string(), (dir_ / "." / "r.out").string()));
  // A relative name of a file not there yet, and its absolute spelling.
  EXPECT_TRUE(same_file_refused("r.out", (fs::current_path() / "r.out").string()));
  EXPECT_TRUE(same_file_refused("./r.out", "r.out"));
  EXPECT_FALSE(same_file_refused((dir_ / "r.csv").string(), (dir_ / "r.json").string()));
}

// Runs that start together, writing into one new folder: each check and
// each write succeeds (the check once made and removed the folder, so runs
// refused each other's paths or lost their report after measuring).
TEST_F(AtomicFileTest, WritersStartingTogetherIntoANewFolderAllSucceed) {
  for (int round = 0; round < 20; ++round) {
    const fs::path folder = dir_ / ("round" + std::to_string(round)) / "sub";
    std::vector<std::thread> writers;
    std::atomic<int> failures{0};
    for (int w = 0; w < 8; ++w)
      writers.emplace_back([&, w] {
        OutputOptions o;
        o.csv_path = (folder / ("w" + std::to_string(w) + ".csv")).string();
        try {
          validate_output_paths(o);
          write_file_atomically(o.csv_path, "x\n");
        } catch (const std::exception&) {
          ++failures;
        }
      });
    for (auto& t : writers) t.join();
    EXPECT_EQ(failures.load(), 0) << "round " << round;
    EXPECT_EQ(names_in(folder).size(), 8u) << "round " << round;
  }
}

Report one_row_report() {
  Report report;
  report.tool = "a_test_tool";
  Row row;
  row.param("size", "1").metric("time_ms", 2.0);
  report.rows.push_back(row);
  return report;
}

// One output that cannot be written (its folder became a file mid-run, a
// full disk) costs no other: the JSON and the table are still written, and
// the failure is thrown after them, once: the tool's main prints it, so
// write_reports itself prints nothing on stderr.
TEST_F(AtomicFileTest, AFailedOutputCostsNoOther) {
  const Report report = one_row_report();
  write_plain(dir_ / "not_a_folder", "x");
  const std::string json = (dir_ / "r.json").string();
  OutputOptions o{.csv_path = (dir_ / "not_a_folder" / "r.csv").string(), .json_path = json};
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  EXPECT_THROW_WITH(write_reports(report, o), std::runtime_error, "r.csv");
  EXPECT_THROW_WITH(write_reports(report, o), std::runtime_error, "(written all the same: " + json + ", the table)");
  EXPECT_CONTAINS(::testing::internal::GetCapturedStdout(), "time_ms");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_CONTAINS(read_all(dir_ / "r.json"), "time_ms");
}

// When every output fails, the message names each failure and claims
// nothing was written.
TEST_F(AtomicFileTest, EveryFailedOutputIsNamedAndNoneClaimedWritten) {
  const Report report = one_row_report();
  write_plain(dir_ / "not_a_folder", "x");
  OutputOptions o{.csv_path = (dir_ / "not_a_folder" / "r.csv").string(),
                  .json_path = (dir_ / "not_a_folder" / "r.json").string(),
                  .quiet = true};
  EXPECT_THROW_WITH(write_reports(report, o), std::runtime_error, "r.csv");
  EXPECT_THROW_WITH(write_reports(report, o), std::runtime_error, "r.json");
  EXPECT_THROW_WITH(write_reports(report, o), std::runtime_error, "(no output was written)");
}

}  // namespace
}  // namespace redline
