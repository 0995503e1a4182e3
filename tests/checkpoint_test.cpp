// checkpoint_bench's model, safety and failure paths on real files with real
// fsync in a temporary directory: the state-size model, the Young/Daly
// numbers, the async save's CPU load, checksum refusal, manifests written by
// older versions, a writer killed mid-save, a full disk, the storage stage
// table, argument validation, files of the user's that a save must not
// replace, and an end-to-end run. No timing assertions.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "harness/core/atomic_file.hpp"
#include "harness/checkpoint/checkpoint_io.hpp"
#include "harness/checkpoint/checkpoint_model.hpp"
#include "harness/measure/young_daly.hpp"
#include "harness/checkpoint/checkpoint_stages.hpp"
#include "harness/core/child_process.hpp"
#include "harness/report/csv_reader.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/report/report.hpp"
#include "tests/support.hpp"

namespace fs = std::filesystem;
using namespace redline;
using redline::testing::TempDir;

namespace {

// Every test of these suites gets a fresh temporary directory, dir_.
class CheckpointIo : public redline::testing::TempDirTest {};
class CheckpointStages : public redline::testing::TempDirTest {};
class CheckpointBench : public redline::testing::TempDirTest {};

AlignedBuffer random_state(std::size_t bytes, std::uint64_t seed = 7) {
  AlignedBuffer b(bytes);
  fill_random(b.data(), bytes, seed, 2);
  return b;
}

std::string rejection(const fs::path& dir) {
  AlignedBuffer into;
  try {
    restore_checkpoint(dir, "checkpoint.bin", into, 2, 1 << 20);
  } catch (const CheckpointRejected& e) {
    return e.what();
  }
  return "";
}

// An 8 MiB tmpfs, for a full disk: mounted for the test's life. Where the
// machine forbids mounts, mounted() is false and why_not() says why.
class SmallTmpfs {
 public:
  explicit SmallTmpfs(fs::path where) : path_(std::move(where)) {
    fs::create_directory(path_);
    mounted_ = ::mount("tmpfs", path_.c_str(), "tmpfs", 0, "size=8m") == 0;
    if (!mounted_)
      why_not_ = std::string("cannot mount an 8 MiB tmpfs here (") + std::strerror(errno) + "): needs root and mount rights";
  }
  ~SmallTmpfs() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& why_not() const { return why_not_; }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  bool mounted_ = false;
  std::string why_not_;
};

std::string content_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

ChildResult bench(std::vector<std::string> args) {
  ChildSpec spec;
  spec.argv = {CHECKPOINT_BENCH_BIN};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout_seconds = 300;
  return run_child(spec);
}

}  // namespace

TEST(CheckpointModel, BytesPerParameter) {
  EXPECT_EQ(checkpoint_bytes_per_param(OptimizerKind::adam), 14u);  // bf16 2 + fp32 master 4 + m 4 + v 4
  EXPECT_EQ(checkpoint_bytes_per_param(OptimizerKind::sgd), 10u);
  EXPECT_EQ(checkpoint_bytes_per_param(OptimizerKind::none), 6u);
  EXPECT_EQ(checkpoint_state_bytes(*preset_parameters("7b"), OptimizerKind::adam), 98'000'000'000u);
  EXPECT_EQ(checkpoint_state_bytes(*preset_parameters("70B"), OptimizerKind::adam), 980'000'000'000u);
  EXPECT_FALSE(preset_parameters("7q"));
  EXPECT_EQ(parse_optimizer("adam"), OptimizerKind::adam);
  EXPECT_FALSE(parse_optimizer("lion"));
  EXPECT_THROW(checkpoint_state_bytes(std::uint64_t{1} << 62, OptimizerKind::adam), std::overflow_error);
  // One limit for every state: --size and a parameter count stop at kMaxCheckpointStateBytes.
  const std::uint64_t most = kMaxCheckpointStateBytes / 14;
  EXPECT_LE(checkpoint_state_bytes(most, OptimizerKind::adam), kMaxCheckpointStateBytes);
  EXPECT_THROW(checkpoint_state_bytes(most + 1, OptimizerKind::adam), std::overflow_error);
}

TEST(CheckpointModel, YoungDaly) {
  // C = 60 s, MTBF = 24 h: tau = sqrt(2 * 60 * 86400) = 3219.94 s.
  const auto a = young_daly_advice(60, 86400, 30);
  EXPECT_NEAR(a.interval_s, std::sqrt(2.0 * 60 * 86400), 1e-9);
  EXPECT_NEAR(a.interval_s, 3219.9379, 1e-3);
  // The stall per interval plus the time lost per failure (half an interval and the restore).
  EXPECT_NEAR(a.overhead_pct, 100.0 * (60 / a.interval_s + (a.interval_s / 2 + 30) / 86400.0), 1e-9);
  EXPECT_NEAR(a.overhead_pct, 3.72678 + 100.0 * 30 / 86400, 1e-4);  // at the optimum the first two terms are equal
  EXPECT_NEAR(a.lost_work_s, a.interval_s / 2 + 30, 1e-9);
  // Async: the snapshot is the cost, but the interval cannot beat the persist.
  const auto b = young_daly_async_advice(1, 100, 3600, 10);
  EXPECT_NEAR(b.interval_s, 100, 1e-9);  // sqrt(2 * 1 * 3600) = 84.9 < 100
  // Overhead: the snapshot per interval, plus per failure the half interval, the unfinished persist and the restore.
  EXPECT_NEAR(b.overhead_pct, 100.0 * (1 / 100.0 + (50 + 100 + 10) / 3600.0), 1e-9);
  EXPECT_NEAR(b.lost_work_s, 50 + 100 + 10, 1e-9);
  const auto c = young_daly_async_advice(1, 10, 3600, 0);
  EXPECT_NEAR(c.interval_s, std::sqrt(7200.0), 1e-9);
}

// Where the first order stops holding, the advice says so: a 20 s save at the
// smallest MTBF (36 s) is an overhead over 100% (no progress at all); 10 s at
// 60 s is a sixth of the MTBF, far from C << M; 60 s at a day is fine.
TEST(CheckpointModel, YoungDalyNamesWhereItStopsHolding) {
  const auto none = young_daly_advice(20, 36, 0);
  EXPECT_GT(none.overhead_pct, 100);
  EXPECT_CONTAINS(young_daly_caveat(none, 20, 36), "no progress: the overhead is 105%");
  const auto rough = young_daly_advice(10, 60, 0);
  EXPECT_LT(rough.overhead_pct, 100);
  EXPECT_CONTAINS(young_daly_caveat(rough, 10, 60), "outside the model: the checkpoint takes 17% of the MTBF");
  EXPECT_EQ(young_daly_caveat(young_daly_advice(60, 86400, 30), 60, 86400), "");
  // Async: the persist, not the snapshot, is what must stay small.
  const auto slow_persist = young_daly_async_advice(1, 1000, 3600, 0);
  EXPECT_CONTAINS(young_daly_caveat(slow_persist, 1000, 3600), "28% of the MTBF");
}

// A persist can finish before the load's first look at `stop`. The load still
// runs a batch first, so its rate is measured over real work: 0 would read as
// a 100% slowdown.
TEST_F(CheckpointStages, CpuLoadRunsABatchEvenWhenStopIsAlreadyTrue) {
  int asked = 0;
  const double rate = cpu_load_rate(60, [&] {
    ++asked;
    return true;
  });
  EXPECT_GT(rate, 0);
  EXPECT_EQ(asked, 1);  // asked once, after the first batch; not run for 60 s
  // Without `stop`, a zero duration also measures one batch.
  EXPECT_GT(cpu_load_rate(0), 0);
}

TEST_F(CheckpointIo, SaveThenRestoreRoundTrips) {
  const std::size_t bytes = (8u << 20) + 123;  // an unaligned tail
  const auto state = random_state(bytes);
  for (bool direct_ok : {false, true}) {
    (void)direct_ok;
    safe_save(dir_, "checkpoint.bin", state.data(), bytes, {.threads = 3, .chunk = 1u << 20, .fsync = true});
    AlignedBuffer into;
    const auto r = restore_checkpoint(dir_, "checkpoint.bin", into, 3, 1 << 20);
    EXPECT_EQ(r.bytes, bytes);
    EXPECT_EQ(std::memcmp(into.data(), state.data(), bytes), 0);
  }
  EXPECT_FALSE(fs::exists(checkpoint_paths(dir_, "checkpoint.bin").temp));
}

// The manifest is made durable before either rename: a save that fails
// there (here a directory blocks its temporary name) leaves the previous
// checkpoint whole and restorable, not new data beside an old manifest.
TEST_F(CheckpointIo, AManifestFailureLeavesThePreviousCheckpointRestorable) {
  const std::size_t bytes = 1u << 20;
  const auto first = random_state(bytes, 1), second = random_state(bytes, 2);
  safe_save(dir_, "checkpoint.bin", first.data(), bytes, {.threads = 2, .chunk = 256u << 10, .fsync = true});
  const fs::path blocker = checkpoint_paths(dir_, "checkpoint.bin").manifest_temp;
  fs::create_directory(blocker);
  EXPECT_THROW(
      safe_save(dir_, "checkpoint.bin", second.data(), bytes, {.threads = 2, .chunk = 256u << 10, .fsync = true}),
      std::runtime_error);
  fs::remove(blocker);
  AlignedBuffer into;
  ASSERT_NO_THROW(restore_checkpoint(dir_, "checkpoint.bin", into, 2, 1 << 20));
  EXPECT_EQ(std::memcmp(into.data(), first.data(), bytes), 0) << "the previous checkpoint is the one restored";
  const auto paths = checkpoint_paths(dir_, "checkpoint.bin");
  EXPECT_FALSE(fs::exists(paths.temp)) << "the temporary data is removed";
  EXPECT_FALSE(fs::exists(paths.previous)) << "the second name for the previous data is dropped";
}

// If the manifest's rename fails after the data's (here the manifest's name
// is a non-empty directory), the previous data is renamed back under its
// name, and the error says so.
TEST_F(CheckpointIo, AFailedManifestRenamePutsThePreviousDataBack) {
  const std::size_t bytes = 256u << 10;
  const auto first = random_state(bytes, 1), second = random_state(bytes, 2);
  const auto paths = checkpoint_paths(dir_, "checkpoint.bin");
  safe_save(dir_, "checkpoint.bin", first.data(), bytes, {.threads = 1, .chunk = 64u << 10, .fsync = true});
  fs::remove(paths.manifest);
  fs::create_directories(paths.manifest / "occupied");
  try {
    safe_save(dir_, "checkpoint.bin", second.data(), bytes, {.threads = 1, .chunk = 64u << 10, .fsync = true});
    ADD_FAILURE() << "the save should have failed at the manifest's rename";
  } catch (const std::runtime_error& e) {
    EXPECT_CONTAINS(e.what(), "the previous checkpoint is back in place");
  }
  const std::string back = content_of(paths.data);
  ASSERT_EQ(back.size(), bytes);
  EXPECT_EQ(std::memcmp(back.data(), first.data(), bytes), 0) << "the data under the checkpoint's name is the previous";
  EXPECT_FALSE(fs::exists(paths.previous));
  EXPECT_FALSE(fs::exists(paths.temp));
  EXPECT_FALSE(fs::exists(paths.manifest_temp));
}

TEST_F(CheckpointIo, DirectWriteMatchesBufferedWhenSupported) {
  if (!supports_direct_io(dir_)) GTEST_SKIP() << dir_ << " refuses O_DIRECT";
  const std::size_t bytes = (4u << 20) + 77;
  const auto state = random_state(bytes);
  write_file(dir_ / "d.bin", state.data(), bytes, {.threads = 2, .chunk = 1u << 20, .fsync = true, .direct = true});
  AlignedBuffer back(bytes);
  EXPECT_TRUE(read_file(dir_ / "d.bin", back.data(), bytes, true, 2, 1 << 20).direct);
  EXPECT_EQ(std::memcmp(back.data(), state.data(), bytes), 0);
}

TEST_F(CheckpointIo, RefusesACorruptedByteNamingTheFileAndTheChunk) {
  const std::size_t bytes = 1u << 20;
  const auto state = random_state(bytes);
  // 64 KiB chunks, each with its own checksum: the flipped byte's is named.
  safe_save(dir_, "checkpoint.bin", state.data(), bytes, {.threads = 3, .chunk = 64u << 10, .fsync = true});
  const fs::path data = dir_ / "checkpoint.bin";
  const std::size_t flipped = 5 * (64u << 10) + 123;
  {
    std::fstream f(data, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(flipped));
    char c = static_cast<char>(state.data()[flipped]) ^ 0x01;
    f.write(&c, 1);
  }
  const std::string why = rejection(dir_);
  EXPECT_CONTAINS(why, data.string());
  EXPECT_CONTAINS(why, "corrupt");
  EXPECT_CONTAINS(why, "bytes 327680..393216");
}

// A manifest whose checksums do not fit its size and chunk, or are not hex,
// is refused naming the manifest, never half-checked.
TEST_F(CheckpointIo, RefusesAMalformedManifest) {
  const auto state = random_state(3000);
  safe_save(dir_, "checkpoint.bin", state.data(), 3000, {.threads = 1, .chunk = 1024, .fsync = true});
  const fs::path manifest = dir_ / "checkpoint.bin.manifest";
  const std::string h = "0123456789abcdef";
  for (const std::string& tail : {"chunk 1024\nxxh64 " + h + " " + h,                          // 2 of 3 chunks
                                  "chunk 1024\nxxh64 " + h + " " + h + " 0123456789abcdeg",   // not hex
                                  "chunk 1024\nxxh64 " + h + " " + h + " " + h + " " + h,     // one too many
                                  std::string("chunk 18446744073709551615\nxxh64")}) {  // a count that would wrap to 0
    std::ofstream(manifest) << "redline-checkpoint 2\nfile checkpoint.bin\nbytes 3000\n" << tail << "\n";
    const std::string why = rejection(dir_);
    EXPECT_CONTAINS(why, manifest.string());
    EXPECT_CONTAINS(why, "malformed");
  }
}

// Manifests as redline wrote them before its XXH64 came from libxxhash: the
// checksums below were computed by that code (its own XXH64) for these 3000
// bytes. Version 1 holds one XXH64 of the whole file, version 2 one per 1024
// bytes. Both still restore, and both are still refused when corrupt.
TEST_F(CheckpointIo, RestoresManifestsWrittenBeforeLibxxhash) {
  std::string data(3000, '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 131) ^ (i >> 5));
  const std::string head = "file checkpoint.bin\nbytes 3000\n";
  for (const std::string& manifest :
       {"redline-checkpoint 1\n" + head + "xxh64 ac8e94eed182c1ea\n",
        "redline-checkpoint 2\n" + head + "chunk 1024\nxxh64 d72b8804fbff65b4 952cd05ce9d17c16 3a5eaaf742519937\n"}) {
    SCOPED_TRACE(manifest);
    std::ofstream(dir_ / "checkpoint.bin", std::ios::binary) << data;
    std::ofstream(dir_ / "checkpoint.bin.manifest") << manifest;
    AlignedBuffer into;
    ASSERT_NO_THROW(restore_checkpoint(dir_, "checkpoint.bin", into, 2, 1024));
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(into.data()), into.size()), data);
    data[2500] ^= 0x01;  // in the last chunk
    std::ofstream(dir_ / "checkpoint.bin", std::ios::binary) << data;
    EXPECT_CONTAINS(rejection(dir_), "corrupt");
    data[2500] ^= 0x01;
  }
}

TEST_F(CheckpointIo, RefusesATruncatedFileNamingTheFile) {
  const std::size_t bytes = 1u << 20;
  const auto state = random_state(bytes);
  safe_save(dir_, "checkpoint.bin", state.data(), bytes, {});
  const fs::path data = dir_ / "checkpoint.bin";
  fs::resize_file(data, bytes / 2);
  const std::string why = rejection(dir_);
  EXPECT_CONTAINS(why, data.string());
  EXPECT_CONTAINS(why, "torn");
}

// A deferred save keeps the previous data under a second name through the
// rename (so its blocks are not freed inside the stall) until released; the
// new checkpoint restores meanwhile, and a leftover from a crash is cleared.
TEST_F(CheckpointIo, DeferredSaveKeepsThePreviousDataUntilReleased) {
  const std::size_t bytes = 1u << 20;
  const auto old_state = random_state(bytes, 1), new_state = random_state(bytes, 2);
  safe_save(dir_, "checkpoint.bin", old_state.data(), bytes, {});
  const auto paths = checkpoint_paths(dir_, "checkpoint.bin");
  safe_save(dir_, "checkpoint.bin", new_state.data(), bytes, {}, PreviousData::defer);
  ASSERT_TRUE(fs::exists(paths.previous));
  std::ifstream kept(paths.previous, std::ios::binary);
  std::vector<char> previous(bytes);
  kept.read(previous.data(), static_cast<std::streamsize>(bytes));
  EXPECT_EQ(std::memcmp(previous.data(), old_state.data(), bytes), 0) << "the previous data, unchanged";
  AlignedBuffer into;
  restore_checkpoint(dir_, "checkpoint.bin", into, 2, 1u << 18);
  EXPECT_EQ(std::memcmp(into.data(), new_state.data(), bytes), 0);
  release_previous_checkpoint(dir_, "checkpoint.bin");
  EXPECT_FALSE(fs::exists(paths.previous));
  // A leftover (a save that crashed before releasing) goes before the next link.
  safe_save(dir_, "checkpoint.bin", old_state.data(), bytes, {}, PreviousData::defer);
  safe_save(dir_, "checkpoint.bin", new_state.data(), bytes, {}, PreviousData::defer);
  kept = std::ifstream(paths.previous, std::ios::binary);
  kept.read(previous.data(), static_cast<std::streamsize>(bytes));
  EXPECT_EQ(std::memcmp(previous.data(), old_state.data(), bytes), 0) << "the last previous, not the leftover";
  // The default releases inside the save.
  safe_save(dir_, "checkpoint.bin", old_state.data(), bytes, {});
  EXPECT_FALSE(fs::exists(paths.previous));
}

TEST_F(CheckpointIo, RefusesACheckpointWithoutManifest) {
  const auto state = random_state(4096);
  safe_save(dir_, "checkpoint.bin", state.data(), 4096, {});
  fs::remove(dir_ / "checkpoint.bin.manifest");
  const std::string why = rejection(dir_);
  EXPECT_CONTAINS(why, (dir_ / "checkpoint.bin").string());
  EXPECT_CONTAINS(why, "no manifest");
}

TEST_F(CheckpointIo, NoCheckpointAtAllIsNotATornSave) {
  const std::string why = rejection(dir_);
  EXPECT_CONTAINS(why, "there is no checkpoint " + (dir_ / "checkpoint.bin").string());
  EXPECT_NOT_CONTAINS(why, "did not complete");
}

// A save may replace a redline checkpoint, never a file redline did not
// write: each way the checkpoint's names can be taken is told apart, naming
// the file.
TEST_F(CheckpointIo, ForeignCheckpointProblemNamesAFileRedlineDidNotWrite) {
  const auto paths = checkpoint_paths(dir_, "checkpoint.bin");
  const std::string data = paths.data.string(), manifest = paths.manifest.string();
  auto problem = [&] { return foreign_checkpoint_problem(dir_, "checkpoint.bin").value_or(""); };
  EXPECT_EQ(problem(), "") << "nothing there";
  const auto state = random_state(4096);
  safe_save(dir_, "checkpoint.bin", state.data(), state.size(), {});
  EXPECT_EQ(problem(), "") << "a redline checkpoint";
  fs::remove(paths.data);
  EXPECT_EQ(problem(), "") << "a redline manifest whose data is gone";

  std::ofstream(paths.data) << "mine";  // the user's file, beside a redline manifest
  EXPECT_EQ(problem(), data + " is not the checkpoint its redline manifest describes (4 bytes, the manifest says 4096)");
  fs::remove(paths.manifest);
  EXPECT_EQ(problem(), data + " exists without a redline manifest (checkpoint.bin.manifest)");
  std::ofstream(paths.manifest) << "my notes";
  EXPECT_EQ(problem(), data + " exists and " + manifest + " is not a redline manifest of it");
  fs::remove(paths.data);
  EXPECT_EQ(problem(), manifest + " exists and is not a redline manifest");
  fs::remove(paths.manifest);

  fs::create_directory(paths.data);
  EXPECT_EQ(problem(), data + " exists and is not a file");
  fs::remove(paths.data);
  safe_save(dir_, "real.bin", state.data(), state.size(), {});
  fs::create_symlink(dir_ / "real.bin", paths.data);
  EXPECT_EQ(problem(), data + " exists and is not a file") << "a link is the user's, wherever it points";
}

TEST_F(CheckpointIo, WriterKilledMidSaveLeavesNothingThatLooksComplete) {
  // A previous complete checkpoint: the killed save must not leave it
  // looking valid with half-new content either.
  const auto old_state = random_state(1u << 20);
  safe_save(dir_, "checkpoint.bin", old_state.data(), old_state.size(), {});
  const auto paths = checkpoint_paths(dir_, "checkpoint.bin");

  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl(CHECKPOINT_WRITER_CHILD_BIN, CHECKPOINT_WRITER_CHILD_BIN, dir_.c_str(), "checkpoint.bin",
            std::to_string(std::size_t{1} << 30).c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  bool saw_temp = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    if (fs::exists(paths.temp, ec) && fs::file_size(paths.temp, ec) > 0 && !ec) {
      saw_temp = true;
      break;
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) FAIL() << "the writer ended before it was killed";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(saw_temp) << "the temporary file never appeared";
  ASSERT_TRUE(WIFSIGNALED(status));
  // Killed while writing the temporary file: the new data never got the
  // final name, so the previous checkpoint is still the complete one and
  // restores bit for bit; the half-written file only has the hidden temp name.
  EXPECT_TRUE(fs::exists(paths.manifest));
  AlignedBuffer back(old_state.size());
  const auto r = restore_checkpoint(dir_, "checkpoint.bin", back, 2, 1 << 20);
  EXPECT_EQ(r.bytes, old_state.size());
  EXPECT_EQ(std::memcmp(back.data(), old_state.data(), old_state.size()), 0) << "the old checkpoint was damaged";
}

TEST_F(CheckpointIo, FullDiskGivesAClearErrorAndLeavesNothingPartial) {
  SmallTmpfs small(dir_ / "small");
  if (!small.mounted()) GTEST_SKIP() << small.why_not();
  const fs::path mnt = small.path();
  const auto state = random_state(16u << 20);
  try {
    safe_save(mnt, "checkpoint.bin", state.data(), state.size(), {.threads = 2, .chunk = 1u << 20, .fsync = true});
    FAIL() << "a 16 MiB save fit in an 8 MiB tmpfs";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_CONTAINS(what, "No space left on device");
    EXPECT_CONTAINS(what, ".checkpoint.bin.redline-tmp");
  }
  EXPECT_TRUE(fs::is_empty(mnt)) << "a failed save left files behind";
  EXPECT_FALSE(rejection(mnt).empty());
}

TEST_F(CheckpointBench, ArgumentValidationNamesTheFlag) {
  const fs::path a_file = dir_ / "plain_file";
  std::ofstream(a_file) << "x";
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {{"all", "--size", "0", "--dir", dir_.string()}, "--size '0'"},
      {{"all", "--size", "12Q", "--dir", dir_.string()}, "--size '12Q'"},
      {{"all", "--size", "1M", "--dir", (dir_ / "missing").string()}, "does not exist"},
      {{"all", "--size", "1M", "--dir", a_file.string()}, "is not a directory"},
      {{"all", "--size", "1M", "--dir", dir_.string(), "--threads", "abc"}, "--threads 'abc'"},
      {{"all", "--size", "1M", "--dir", dir_.string(), "--mtbf", "-3"}, "--mtbf '-3'"},
      // Outside a physical range the advice printed inf, nan% or a 60-digit overhead.
      {{"all", "--size", "1M", "--dir", dir_.string(), "--mtbf", "1e308"}, "--mtbf '1e308': must be between 0.01 h"},
      {{"all", "--size", "1M", "--dir", dir_.string(), "--mtbf", "1e-300"}, "--mtbf '1e-300': must be between 0.01 h"},
      {{"all", "--size", "1M", "--dir", dir_.string(), "--gpu-mtbf", "1e308", "--gpus", "8"},
       "--gpu-mtbf '1e308': must be between 0.01 h (36 s) and 10000000 h"},
      {{"all", "--size", "1M", "--dir", dir_.string(), "--gpu-mtbf", "1e-300", "--gpus", "8"}, "--gpu-mtbf '1e-300'"},
      {{"all", "--size", "1M", "--dir", dir_.string(), "--gpu-mtbf", "1", "--gpus", "1000"},
       "--gpus '1000': with --gpu-mtbf 1 gives a job MTBF of 3.6 s"},
      {{"all", "--model", "7q", "--dir", dir_.string()}, "--model '7q'"},
      // --size has the limit of --params; 2 x the state no longer wraps to 0 in the host memory check.
      {{"save", "--size", "9223372036854775807", "--dir", dir_.string()},
       "--size '9223372036854775807': must be at most 2^60 bytes (1 EiB)"},
      {{"save", "--size", "16000000T", "--dir", dir_.string()}, "--size '16000000T': must be at most 2^60"},
      {{"save", "--params", "100000000000000000", "--dir", dir_.string()},
       "--params '100000000000000000': 100000000000000000 parameters x 14 B is a state above 2^60 bytes"},
      {{"save", "--size", "1048576T", "--dir", dir_.string()}, "needs twice the state (2097152T) in host memory"},
      {{"all", "--size", "1M", "--dir", dir_.string(), "--optimizer", "lion"}, "--optimizer 'lion'"},
      {{"frobnicate", "--size", "1M", "--dir", dir_.string()}, "COMMAND 'frobnicate'"},
      {{"save", "--size", "1M", "--dir", dir_.string(), "--rounds", "0"}, "--rounds '0'"},
      // A flag that would be silently dropped: two parameter counts, an
      // optimizer beside a size in bytes, a GPU count beside the job's MTBF.
      {{"all", "--params", "1000", "--model", "7b", "--dir", dir_.string()}, "--model '7b': give the parameter count once"},
      {{"all", "--size", "1M", "--optimizer", "sgd", "--dir", dir_.string()}, "--optimizer 'sgd': does nothing with --size"},
      {{"all", "--size", "1M", "--mtbf", "24", "--gpus", "1024", "--dir", dir_.string()},
       "--gpus '1024': only counts with --gpu-mtbf"},
  };
  for (const auto& c : cases) {
    const auto r = bench(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_CONTAINS(r.output, c.expect);
    if (c.expect.find("exist") != std::string::npos || c.expect.find("directory") != std::string::npos) {
      EXPECT_CONTAINS(r.output, "--dir");
    }
  }
}

// A directory no file can be created in is refused for a save (exit 2), and
// a restore, which only reads, still works there: a read-only mount.
TEST_F(CheckpointBench, ReadOnlyDirectoryRefusesSavesAndServesRestores) {
  SmallTmpfs small(dir_ / "ro");
  if (!small.mounted()) GTEST_SKIP() << small.why_not();
  const fs::path mnt = small.path();
  ASSERT_EQ(bench({"save", "--size", "1M", "--rounds", "1", "--dir", mnt.string(), "--quiet"}).exit_code, 0);
  ASSERT_EQ(::mount(nullptr, mnt.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr), 0) << std::strerror(errno);
  const auto save = bench({"save", "--size", "1M", "--dir", mnt.string()});
  EXPECT_EQ(save.exit_code, 2) << save.output;
  EXPECT_CONTAINS(save.output, "--dir '" + mnt.string() + "': is not writable (cannot create .redline-probe-");
  EXPECT_CONTAINS(save.output, ": Read-only file system)");
  const auto restore = bench({"restore", "--dir", mnt.string(), "--quiet"});
  EXPECT_EQ(restore.exit_code, 0) << restore.output;
}

// restore from a directory with no checkpoint.bin is the wrong --dir: exit 2, and the --csv a
// user already has is left as it was. Data without its manifest is still a torn save (exit 1).
TEST_F(CheckpointBench, RestoreWithoutACheckpointIsBadInputAndWritesNothing) {
  const fs::path empty = dir_ / "empty", csv = dir_ / "kept.csv";
  fs::create_directory(empty);
  std::ofstream(csv) << "the user's own file\n";
  auto r = bench({"restore", "--dir", empty.string(), "--csv", csv.string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_CONTAINS(r.output, "no checkpoint.bin in --dir '" + empty.string() + "'");
  EXPECT_EQ(content_of(csv), "the user's own file\n");
  EXPECT_TRUE(fs::is_empty(empty));

  ASSERT_EQ(bench({"save", "--size", "1M", "--rounds", "1", "--dir", empty.string(), "--quiet"}).exit_code, 0);
  fs::remove(empty / "checkpoint.bin.manifest");
  r = bench({"restore", "--dir", empty.string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "has no manifest");
}

// restore takes the size from the manifest, writes nothing and gives no interval without a
// save: a flag that would do nothing there is refused (exit 2, naming it), even at its default.
TEST_F(CheckpointBench, RestoreRefusesFlagsThatDoNothing) {
  ASSERT_EQ(bench({"save", "--size", "1M", "--rounds", "1", "--dir", dir_.string(), "--quiet"}).exit_code, 0);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--size", "1M"}, "--size '1M': does nothing with restore"},
      {{"--params", "1000"}, "--params '1000': does nothing with restore"},
      {{"--model", "7b"}, "--model '7b': does nothing with restore"},
      {{"--optimizer", "adam"}, "--optimizer 'adam': does nothing with restore"},
      {{"--keep"}, "--keep does nothing with restore"},
      {{"--overwrite"}, "--overwrite does nothing with restore"},
      {{"--no-fsync"}, "--no-fsync does nothing with restore"},
      {{"--mtbf", "5"}, "--mtbf '5': does nothing with restore"},
      {{"--gpu-mtbf", "5", "--gpus", "8"}, "--gpu-mtbf '5': does nothing with restore"},
  };
  for (const auto& [extra, expect] : cases) {
    std::vector<std::string> args = {"restore", "--dir", dir_.string(), "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = bench(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_CONTAINS(r.output, expect);
  }
  // What restore does use still works: --threads, --chunk and --rounds shape its reads.
  const auto r = bench({"restore", "--dir", dir_.string(), "--quiet", "--threads", "2", "--chunk", "1M", "--rounds", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// gpu times host-device copies only: what it would ignore is refused before
// anything runs, GPU or not.
TEST_F(CheckpointBench, GpuRefusesFlagsThatDoNothing) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--dir", dir_.string()}, "--dir '" + dir_.string() + "': does nothing with gpu"},
      {{"--keep"}, "--keep does nothing with gpu"},
      {{"--overwrite"}, "--overwrite does nothing with gpu"},
      {{"--no-fsync"}, "--no-fsync does nothing with gpu"},
      {{"--threads", "2"}, "--threads '2': does nothing with gpu"},
      {{"--chunk", "1M"}, "--chunk '1M': does nothing with gpu"},
      {{"--rounds", "7"}, "--rounds '7': does nothing with gpu"},
      {{"--mtbf", "5"}, "--mtbf '5': does nothing with gpu"},
      {{"--gpu-mtbf", "5", "--gpus", "8"}, "--gpu-mtbf '5': does nothing with gpu"},
  };
  for (const auto& [extra, expect] : cases) {
    std::vector<std::string> args = {"gpu", "--size", "1M"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = bench(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_CONTAINS(r.output, expect);
  }
}

TEST_F(CheckpointBench, GpuOnlyWithoutGpuExits77) {
  const auto r = bench({"gpu", "--size", "1M"});
  if (r.exit_code == 0) GTEST_SKIP() << "a GPU is usable here";
  EXPECT_EQ(r.exit_code, 77) << r.output;
  EXPECT_CONTAINS(r.output, "skipped");
}

TEST_F(CheckpointBench, EndToEndWritesEveryStageRow) {
  const fs::path csv = dir_ / "out.csv", json = dir_ / "out.json";
  // --keep: `all` cleans up after itself otherwise (checked at the end).
  // --chunk 16M: 4 chunks, so 4 writers really run (in the default 64M
  // chunks a 64M state has one, and the writers chart no second point).
  const auto r = bench({"all", "--size", "64M", "--chunk", "16M", "--dir", dir_.string(), "--csv", csv.string(),
                        "--json", json.string(), "--quiet", "--keep"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The JSON carries the one chart the schema's hints make of these rows:
  // the writers stage's GB/s against threads, a line per chunk size.
  std::ifstream json_in(json);
  const auto charts = nlohmann::json::parse(json_in).at("context").at("redline").at("charts");
  ASSERT_EQ(charts.size(), 1u) << charts.dump(1);
  EXPECT_CONTAINS(charts[0].at("title").get<std::string>(), "stage=writers");
  EXPECT_EQ(charts[0].at("x").at("parameter"), "threads");
  EXPECT_EQ(charts[0].at("y").at("metric"), "GBps");
  std::ifstream in(csv);
  std::stringstream text;
  text << in.rdbuf();
  for (const char* stage : {"raw_write", "raw_read", "buffered_write", "write_fsync", "odirect_write", "writers",
                            "save.checksum", "save.fsync_file", "save.rename", "save.fsync_dir", "save.manifest",
                            "async.snapshot", "async.persist", "async.load", "restore.read", "restore.verify",
                            "advice_sync", "advice_async", "gpu.d2h", "restore.h2d", "release_previous"})
    EXPECT_CONTAINS(text.str(), std::string("stage=") + stage);
  EXPECT_TRUE(fs::exists(dir_ / "checkpoint.bin.manifest"));
  // Restore runs --rounds (4 by default) times too and reports the median round.
  const CsvTable t = read_csv(csv);
  bool restore_row = false;
  for (std::size_t i = 0; i < t.rows.size(); ++i)
    if (t.value(i, "stage") == "restore") {
      restore_row = true;
      EXPECT_EQ(t.value(i, "note"), "median of 4 rounds (the lower middle one)");
      EXPECT_FALSE(t.value(i, "time_cv").empty());
    }
  EXPECT_TRUE(restore_row);
  // Without a GPU the snapshot is a host copy on every core, and its row says
  // so; from a GPU one thread issues the copy.
  const std::string cores = std::to_string(std::max(1u, std::thread::hardware_concurrency()));
  for (std::size_t i = 0; i < t.rows.size(); ++i)
    if (t.value(i, "stage") == "async.snapshot")
      EXPECT_EQ(t.value(i, "threads"), t.value(i, "note").find("(GPU)") != std::string::npos ? "1" : cores);
  // The async stall's share of the synchronous one is the two advice costs' ratio.
  std::optional<double> sync_cost, async_cost, share;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    if (t.value(i, "stage") == "advice_sync") sync_cost = std::stod(t.value(i, "cost_s"));
    if (t.value(i, "stage") == "advice_async") {
      async_cost = std::stod(t.value(i, "cost_s"));
      share = std::stod(t.value(i, "stall_vs_sync_pct"));
    }
  }
  ASSERT_TRUE(sync_cost && async_cost && share);
  EXPECT_NEAR(*share, 100 * *async_cost / *sync_cost, 1e-6 * *share);
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_NOT_CONTAINS(e.path().filename().string(), ".redline-checkpoint-scratch");
  // restore alone re-reads and verifies what the run left.
  const auto again = bench({"restore", "--dir", dir_.string(), "--quiet"});
  EXPECT_EQ(again.exit_code, 0) << again.output;
  // and refuses it once corrupted (exit 1, naming the file).
  {
    std::fstream f(dir_ / "checkpoint.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1000);
    char c = 0;
    f.read(&c, 1);
    c ^= 0x40;
    f.seekp(1000);
    f.write(&c, 1);
  }
  const fs::path refused_csv = dir_ / "refused.csv";
  const auto bad = bench({"restore", "--dir", dir_.string(), "--csv", refused_csv.string()});
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_CONTAINS(bad.output, (dir_ / "checkpoint.bin").string());
  // The refused restore is the same case as a good one of that file: its bytes.
  const CsvTable refused = read_csv(refused_csv);
  bool refused_row = false;
  for (std::size_t i = 0; i < refused.rows.size(); ++i)
    if (refused.value(i, "stage") == "restore") {
      refused_row = true;
      EXPECT_EQ(refused.value(i, "status"), "wrong");
      EXPECT_EQ(refused.value(i, "bytes"), std::to_string(64 << 20));
    }
  EXPECT_TRUE(refused_row);
}

// Rows name the threads that ran: a 16M state in 64M chunks is one chunk, one
// writer, whatever --threads says. A save without fsync has no fsync step to
// time: a skipped row, not an ok 0 GB/s.
TEST_F(CheckpointBench, RowsSayWhatRan) {
  const fs::path csv = dir_ / "out.csv";
  const auto r = bench({"all", "--size", "16M", "--rounds", "1", "--no-fsync", "--dir", dir_.string(), "--csv",
                        csv.string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const CsvTable t = read_csv(csv);
  std::set<std::string> keys;
  bool fsync_step = false;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    EXPECT_TRUE(keys.insert(t.value(i, "case_key")).second) << "twice: " << t.value(i, "case_key");
    const std::string& stage = t.value(i, "stage");
    if (t.value(i, "chunk") == "64M") EXPECT_EQ(t.value(i, "threads"), "1") << stage;
    if (stage == "save.fsync_file") {
      fsync_step = true;
      EXPECT_EQ(t.value(i, "status"), "skipped");
      EXPECT_EQ(t.value(i, "GBps"), "");
    }
  }
  EXPECT_TRUE(fsync_step);
}

// On a file system held in memory every figure is memory bandwidth: the rows
// and the summary say so, whatever O_DIRECT did (Linux 6.6 and later accept
// it on tmpfs).
TEST_F(CheckpointBench, AMemoryFileSystemIsNamed) {
  if (memory_file_system(dir_)) GTEST_SKIP() << "the test folder is itself on a memory file system";
  EXPECT_EQ(memory_file_system(dir_), std::nullopt);
  SmallTmpfs small(dir_ / "small");
  if (!small.mounted()) GTEST_SKIP() << small.why_not();
  EXPECT_EQ(memory_file_system(small.path()), "tmpfs");
  const fs::path csv = dir_ / "out.csv";
  const auto r = bench({"all", "--size", "1M", "--rounds", "1", "--dir", small.path().string(), "--csv", csv.string()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "is on tmpfs, in memory: every figure here is memory bandwidth");
  const CsvTable t = read_csv(csv);
  for (std::size_t i = 0; i < t.rows.size(); ++i)
    if (t.value(i, "stage") == "raw_read" || t.value(i, "stage") == "restore.read")
      EXPECT_CONTAINS(t.value(i, "note"), "on tmpfs, in memory: this read is memory bandwidth");
}

// The save is judged against raw writes paired with it: the save row's
// ceiling_pct is the paired raw median over the save median, and the save's
// step rows come from one round, so they add up to the save row. An even
// round count (the default, which balances the pair's order) takes the lower
// middle round for both, and says so.
TEST_F(CheckpointBench, SaveRoundsAlternateWithRawWritesAndCompareMedians) {
  for (const auto& [rounds, median] : {std::pair<std::string, std::string>{"3", "median of 3 rounds"},
                                       {"4", "median of 4 rounds (the lower middle one)"}}) {
    SCOPED_TRACE("--rounds " + rounds);
    const TempDir dir("checkpoint_test");
    const fs::path csv = dir.path() / "out.csv";
    const auto r = bench(
        {"save", "--size", "16M", "--dir", dir.path().string(), "--rounds", rounds, "--csv", csv.string(), "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const CsvTable t = read_csv(csv);
    std::optional<std::size_t> save, paired;
    double steps = 0, checksum = 0, write = 0;
    for (std::size_t i = 0; i < t.rows.size(); ++i) {
      const std::string& stage = t.value(i, "stage");
      if (stage == "save") save = i;
      if (stage == "raw_write_paired") paired = i;
      if (stage == "save.checksum") checksum = std::stod(t.value(i, "time_s"));
      if (stage == "save.write") write = std::stod(t.value(i, "time_s"));
      // The checksum is taken inside the write (each chunk as it goes): counted there.
      if (stage.starts_with("save.") && stage != "save.checksum") steps += std::stod(t.value(i, "time_s"));
    }
    EXPECT_GT(checksum, 0);
    EXPECT_LE(checksum, write) << "each writer's hashing is part of its write";
    ASSERT_TRUE(save && paired) << "save and raw_write_paired rows";
    const double save_s = std::stod(t.value(*save, "time_s")), paired_s = std::stod(t.value(*paired, "time_s"));
    EXPECT_NEAR(std::stod(t.value(*save, "ceiling_pct")), 100 * paired_s / save_s, 1e-6 * 100 * paired_s / save_s);
    EXPECT_CONTAINS(t.value(*save, "note"), median);
    EXPECT_CONTAINS(t.value(*paired, "note"), median);
    if (rounds == "3") EXPECT_NOT_CONTAINS(t.value(*save, "note"), "lower middle");
    EXPECT_FALSE(t.value(*save, "time_cv").empty());
    // The steps are timed inside the save; only the gaps between them are not.
    EXPECT_LE(steps, save_s * (1 + 1e-9));
  }
}

// Ctrl-C during the storage stages: the stage running finishes, later ones
// do not start, the report keeps what was measured, and the exit is 128+2.
TEST_F(CheckpointBench, CtrlCKeepsTheStagesMeasuredSoFar) {
  const fs::path csv = dir_ / "out.csv";
  const fs::path data = dir_ / "data";
  fs::create_directory(data);
  ChildSpec spec;
  // The signal goes once the first storage stage's scratch file appears,
  // whatever the start-up took. Not just any file: the --dir check's probe
  // file comes earlier, before any stage has begun.
  spec.argv = {"/bin/sh", "-c",
               std::string(CHECKPOINT_BENCH_BIN) + " all --size 512M --dir " + data.string() + " --csv " +
                   csv.string() + " --quiet & pid=$!; until ls -A " + data.string() +
                   " | grep -q scratch; do sleep 0.05; done; kill -INT $pid; wait $pid"};
  spec.timeout_seconds = 300;
  const ChildResult r = run_child(spec);
  EXPECT_EQ(r.exit_code, 128 + SIGINT) << r.output;
  ASSERT_TRUE(fs::exists(csv)) << r.output;
  const CsvTable t = read_csv(csv);
  bool raw_write = false, async = false;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    raw_write = raw_write || (t.value(i, "stage") == "raw_write" && t.value(i, "status") == "ok");
    async = async || t.value(i, "stage").starts_with("async.");
  }
  EXPECT_TRUE(raw_write) << "the stage running at Ctrl-C is kept";
  EXPECT_FALSE(async) << "stages after Ctrl-C must not start";
  for (const auto& e : fs::directory_iterator(data)) ADD_FAILURE() << "left behind: " << e.path();
}

// A signal during the storage stages ends them after the part under way:
// its row is kept, nothing after it runs, no save time is made up, and the
// scratch file is gone.
TEST_F(CheckpointStages, AnInterruptStopsBetweenParts) {
  CheckpointConfig cfg;
  cfg.dir = dir_;
  cfg.bytes = 1 << 20;
  cfg.chunk = 1 << 20;
  std::vector<std::byte> state(cfg.bytes, std::byte{7});
  Report report;
  set_interrupted_for_testing(true);
  const StorageResults out = run_storage_stages(cfg, state.data(), report);
  set_interrupted_for_testing(false);
  ASSERT_EQ(report.rows.size(), 1u);
  EXPECT_EQ(report.rows[0].param_value("stage"), "raw_write");
  EXPECT_EQ(out.save_s, 0);
  EXPECT_TRUE(fs::is_empty(dir_));
}

// The storage stage table is the run: its stages write rows in the table's
// order, each under its own name, and say what they measure.
TEST_F(CheckpointStages, TheStorageStagesRunInTheTablesOrder) {
  CheckpointConfig cfg;
  cfg.dir = dir_;
  cfg.bytes = 1 << 20;
  cfg.chunk = 1 << 20;
  cfg.rounds = 2;
  const auto state = random_state(cfg.bytes);
  Report report;
  const StorageResults out = run_storage_stages(cfg, state.data(), report);
  EXPECT_GT(out.save_s, 0);
  std::vector<std::string> table, first_seen;
  for (const StorageStage& stage : storage_stages()) {
    table.emplace_back(stage.name);
    EXPECT_FALSE(stage.measures.empty()) << stage.name;
  }
  for (const Row& row : report.rows) {
    const std::string stage = row.param_value("stage").value_or("");
    if (std::find(table.begin(), table.end(), stage) != table.end() &&
        std::find(first_seen.begin(), first_seen.end(), stage) == first_seen.end())
      first_seen.push_back(stage);
  }
  EXPECT_EQ(first_seen, table);
  // What is left: the checkpoint and its manifest; the scratch files are gone.
  EXPECT_EQ(names_in(dir_), (std::set<std::string>{"checkpoint.bin", "checkpoint.bin.manifest"}));
}

// The refusal is made again right before the save: a checkpoint.bin that
// appears after the flags were checked (another job's) is not replaced
// unless --overwrite said so; the save stage fails and the file is intact.
TEST_F(CheckpointStages, TheSaveChecksAgainForAFileItDidNotWrite) {
  CheckpointConfig cfg;
  cfg.dir = dir_;
  cfg.bytes = 1 << 20;
  cfg.chunk = 1 << 20;
  cfg.rounds = 1;
  const auto state = random_state(cfg.bytes);
  std::ofstream(dir_ / "checkpoint.bin") << "another job's checkpoint";
  Report report;
  EXPECT_THROW(run_storage_stages(cfg, state.data(), report), CheckpointRejected);
  std::ifstream in(dir_ / "checkpoint.bin");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "another job's checkpoint");

  cfg.may_replace_foreign = true;  // --overwrite
  Report replaced;
  EXPECT_GT(run_storage_stages(cfg, state.data(), replaced).save_s, 0);
  EXPECT_EQ(fs::file_size(dir_ / "checkpoint.bin"), cfg.bytes);
}

// A second signal ends the run at once (no destructors run), as `timeout`
// does by signalling twice: the state-sized scratch files go all the same.
// Signalled once the scratch file exists, and once `all`'s own checkpoint
// (which it removes at its end) does.
TEST_F(CheckpointBench, ASecondSignalStillRemovesTheScratchFiles) {
  for (const std::string appears : {"scratch", "^redline-checkpoint-.*bin$"}) {
    SCOPED_TRACE(appears);
    const TempDir dir("checkpoint_test");
    const fs::path data = dir.path() / "data";
    fs::create_directory(data);
    ChildSpec spec;
    spec.argv = {"/bin/sh", "-c",
                 std::string(CHECKPOINT_BENCH_BIN) + " all --size 256M --dir " + data.string() +
                     " --quiet & pid=$!; until ls -A " + data.string() + " | grep -q '" + appears +
                     "'; do sleep 0.05; done; kill -TERM $pid; sleep 0.3; kill -TERM $pid; wait $pid"};
    spec.timeout_seconds = 300;
    const ChildResult r = run_child(spec);
    EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.output;
    for (const auto& e : fs::directory_iterator(data)) ADD_FAILURE() << "left behind: " << e.path();
  }
}

// `all` writes under a name of its own and removes only that: a checkpoint
// the user keeps in the same directory is never replaced or deleted.
TEST_F(CheckpointBench, AllLeavesTheUsersCheckpointAlone) {
  std::ofstream(dir_ / "checkpoint.bin") << "mine";
  std::ofstream(dir_ / "checkpoint.bin.manifest") << "mine too";
  const auto r = bench({"all", "--size", "4M", "--rounds", "1", "--dir", dir_.string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(names_in(dir_), (std::set<std::string>{"checkpoint.bin", "checkpoint.bin.manifest"}));
  EXPECT_EQ(content_of(dir_ / "checkpoint.bin"), "mine");
}

// A checkpoint.bin that redline did not save is never replaced: `save` and
// `all --keep` (which write that name) refuse with exit 2 naming the file and
// touch nothing; --overwrite replaces it, and the checkpoint then written is
// redline's own, which later saves replace without being told.
TEST_F(CheckpointBench, SaveRefusesToReplaceAFileItDidNotWrite) {
  const fs::path mine = dir_ / "checkpoint.bin";
  std::ofstream(mine) << "my model";
  for (const std::vector<std::string>& command : {std::vector<std::string>{"save"}, {"all", "--keep"}}) {
    SCOPED_TRACE(command.front());
    std::vector<std::string> args = command;
    args.insert(args.end(), {"--size", "1M", "--rounds", "1", "--dir", dir_.string()});
    const auto r = bench(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_CONTAINS(r.output, "--dir '" + dir_.string() + "': " + mine.string() + " exists without a redline manifest");
    EXPECT_CONTAINS(r.output, "--overwrite");
    EXPECT_EQ(content_of(mine), "my model");
    EXPECT_EQ(names_in(dir_), std::set<std::string>{"checkpoint.bin"});
  }
  const auto replaced = bench({"save", "--size", "1M", "--rounds", "1", "--dir", dir_.string(), "--overwrite", "--quiet"});
  ASSERT_EQ(replaced.exit_code, 0) << replaced.output;
  EXPECT_EQ(fs::file_size(mine), 1u << 20);
  const auto again = bench({"save", "--size", "2M", "--rounds", "1", "--dir", dir_.string(), "--quiet"});
  EXPECT_EQ(again.exit_code, 0) << "redline's own checkpoint is replaced without --overwrite\n" << again.output;
  EXPECT_EQ(bench({"restore", "--dir", dir_.string(), "--quiet"}).exit_code, 0);
}

// The save's own files have names that say redline: files of the user's with
// the generic names a save could have used (.checkpoint.bin.tmp,
// .checkpoint.bin.previous, ...) are neither replaced nor removed, over
// rounds that write, rename and free a previous checkpoint.
TEST_F(CheckpointBench, SaveLeavesTheUsersOtherFilesAlone) {
  const std::vector<std::string> theirs = {".checkpoint.bin.tmp", ".checkpoint.bin.manifest.tmp",
                                           ".checkpoint.bin.previous", "checkpoint.bin.tmp", "notes.txt"};
  for (const auto& name : theirs) std::ofstream(dir_ / name) << "user's " << name;
  const auto r = bench({"all", "--keep", "--size", "1M", "--rounds", "2", "--dir", dir_.string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const auto& name : theirs) EXPECT_EQ(content_of(dir_ / name), "user's " + name);
  std::set<std::string> expected(theirs.begin(), theirs.end());
  expected.insert({"checkpoint.bin", "checkpoint.bin.manifest"});
  EXPECT_EQ(names_in(dir_), expected);
}

// The previous checkpoint's release is measured only where there was one:
// a single save into an empty directory frees nothing and says so.
TEST_F(CheckpointBench, ReleasePreviousOnlyWhereThereWasOne) {
  for (const auto& [rounds, status] : {std::pair<std::string, std::string>{"1", "skipped"}, {"2", "ok"}}) {
    const TempDir dir("checkpoint_test");
    const fs::path csv = dir.path() / "out.csv";
    const auto r = bench({"save", "--size", "8M", "--dir", dir.path().string(), "--rounds", rounds, "--csv",
                          csv.string(), "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const CsvTable t = read_csv(csv);
    bool found = false;
    for (std::size_t i = 0; i < t.rows.size(); ++i)
      if (t.value(i, "stage") == "release_previous") {
        found = true;
        EXPECT_EQ(t.value(i, "status"), status) << "--rounds " << rounds << ": " << t.value(i, "note");
      }
    EXPECT_TRUE(found);
    EXPECT_FALSE(fs::exists(checkpoint_paths(dir.path(), "checkpoint.bin").previous));
  }
}

TEST_F(CheckpointBench, AllLeavesTheDirectoryAsItFoundIt) {
  const auto r = bench({"all", "--size", "8M", "--dir", dir_.string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const auto& e : fs::directory_iterator(dir_)) ADD_FAILURE() << "left behind: " << e.path();
}

TEST_F(CheckpointBench, AFullDiskIsAnErrorRowAndTheReportIsKept) {
  SmallTmpfs small(dir_ / "small");
  if (!small.mounted()) GTEST_SKIP() << small.why_not();
  const fs::path mnt = small.path();
  const fs::path csv = dir_ / "out.csv";
  const auto r = bench({"all", "--size", "16M", "--dir", mnt.string(), "--csv", csv.string(), "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  ASSERT_TRUE(fs::exists(csv)) << "the stages measured before the failure were lost\n" << r.output;
  std::ifstream in(csv);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_CONTAINS(text.str(), "stage=save");
  EXPECT_CONTAINS(text.str(), ",error,");
  // The error row is keyed as the stage's own rows are.
  EXPECT_CONTAINS(text.str(), "stage=save;bytes=16777216;threads=1;chunk=64M;fsync=1");
  EXPECT_CONTAINS(text.str(), "No space left on device");
  EXPECT_CONTAINS(r.output, "warning: --dir has ");
}
