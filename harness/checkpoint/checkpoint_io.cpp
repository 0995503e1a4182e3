#include "harness/checkpoint/checkpoint_io.hpp"

#include "harness/core/clock.hpp"
#include "harness/core/interrupt.hpp"
#include "harness/core/splitmix64.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <functional>
#include <thread>
#include <vector>

#include "harness/core/atomic_file.hpp"

namespace redline {
namespace fs = std::filesystem;

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// XXH64 (libxxhash): fast enough to checksum a checkpoint without becoming the
// stall. It detects torn and corrupted files, not deliberate tampering (not
// cryptographic). Every manifest version holds XXH64s with seed 0.
std::uint64_t xxh64(const std::byte* data, std::size_t length) { return XXH64(data, length, 0); }

// An open descriptor closed on every exit path.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Runs pwrite/pread of [begin, end) in chunks over `threads` threads; returns
// the first errno (0 when all succeeded) and, for reads, EIO-like short reads
// as ENODATA.
// `before_write(index, offset, length)` runs in the writer thread before each
// chunk is written (chunk `index` counted from `begin`).
using ChunkHook = std::function<void(std::size_t, std::size_t, std::size_t)>;

template <bool Write>
int parallel_io(int fd, std::byte* data, std::size_t begin, std::size_t end, unsigned threads, std::size_t chunk,
                const ChunkHook& before_write = {}) {
  if (end <= begin) return 0;
  const std::size_t chunks = (end - begin + chunk - 1) / chunk;
  threads = io_threads(end - begin, threads, chunk);
  std::atomic<int> first_error{0};
  auto worker = [&](unsigned t) {
    for (std::size_t c = t; c < chunks && first_error.load() == 0; c += threads) {
      std::size_t off = begin + c * chunk;
      const std::size_t stop = std::min(end, off + chunk);
      if (Write && before_write) before_write(c, off, stop - off);
      while (off < stop) {
        const ssize_t n = Write ? ::pwrite(fd, data + off, stop - off, static_cast<off_t>(off))
                                : ::pread(fd, data + off, stop - off, static_cast<off_t>(off));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          int expected = 0;
          first_error.compare_exchange_strong(expected, n < 0 ? errno : (Write ? ENOSPC : ENODATA));
          return;
        }
        off += static_cast<std::size_t>(n);
      }
    }
  };
  if (threads == 1) {
    worker(0);
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker, t);
    for (auto& th : pool) th.join();
  }
  return first_error.load();
}

constexpr std::size_t kAlign = AlignedBuffer::kAlignment;
std::size_t aligned_chunk(std::size_t chunk) { return std::max(kAlign, chunk / kAlign * kAlign); }

std::string hex64(std::uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

}  // namespace

AlignedBuffer::AlignedBuffer(std::size_t bytes) : size_(bytes) {
  const std::size_t rounded = std::max(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (!p) throw std::bad_alloc();
  data_.reset(static_cast<std::byte*>(p));
}

void AlignedBuffer::Free::operator()(std::byte* p) const { std::free(p); }

void fill_random(std::byte* data, std::size_t bytes, std::uint64_t seed, unsigned threads) {
  const std::size_t words = bytes / 8;
  threads = std::max(1u, threads);
  auto fill = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      const std::uint64_t x = splitmix64(seed + i * kSplitMix64Step);
      std::memcpy(data + i * 8, &x, 8);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back(fill, words * t / threads, words * (t + 1) / threads);
  for (auto& th : pool) th.join();
  for (std::size_t i = words * 8; i < bytes; ++i) data[i] = static_cast<std::byte>(0xA5 ^ i);
}

void parallel_copy(std::byte* to, const std::byte* from, std::size_t bytes, unsigned threads) {
  threads = std::max(1u, threads);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    const std::size_t begin = bytes * t / threads, end = bytes * (t + 1) / threads;
    pool.emplace_back([=] { std::memcpy(to + begin, from + begin, end - begin); });
  }
  for (auto& th : pool) th.join();
}

WriteTimes write_file(const fs::path& path, const std::byte* data, std::size_t bytes, const WriteOptions& options,
                      ChunkChecksums* checksums) {
  if (checksums && options.direct) throw std::logic_error("write_file: chunk checksums need a buffered write");
  auto* mutable_data = const_cast<std::byte*>(data);  // pwrite only reads it
  const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
  WriteTimes times;
  // Every write goes to a fresh file, as a checkpoint's temporary file does:
  // truncating an old one of the same size would time the freeing of its blocks.
  ::unlink(path.c_str());
  const double t0 = steady_seconds();
  Fd plain(::open(path.c_str(), flags, 0644));
  if (plain.fd < 0) throw std::runtime_error("cannot create " + path.string() + ": " + errno_text(errno));
  std::size_t direct_end = 0;
  int err = 0;
  if (options.direct) {
    Fd direct(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_DIRECT));
    if (direct.fd < 0) {
      const int e = errno;
      if (e == EINVAL) throw DirectIoUnsupported("the filesystem of " + path.string() + " refuses O_DIRECT");
      throw std::runtime_error("cannot open " + path.string() + " with O_DIRECT: " + errno_text(e));
    }
    direct_end = bytes / kAlign * kAlign;
    err = parallel_io<true>(direct.fd, mutable_data, 0, direct_end, options.threads, aligned_chunk(options.chunk));
  }
  ChunkHook hash_chunk;
  std::vector<double> hashing(checksums ? (bytes + options.chunk - 1) / options.chunk : 0);
  if (checksums) {
    checksums->chunk = options.chunk;
    checksums->xxh64.assign(hashing.size(), 0);
    hash_chunk = [&](std::size_t index, std::size_t offset, std::size_t length) {
      const double t = steady_seconds();
      checksums->xxh64[index] = xxh64(data + offset, length);  // one writer per chunk: no race
      hashing[index] = steady_seconds() - t;
    };
  }
  if (err == 0)
    err = parallel_io<true>(plain.fd, mutable_data, direct_end, bytes, options.threads, options.chunk, hash_chunk);
  if (checksums) {
    checksums->hashing_s = 0;
    for (double s : hashing) checksums->hashing_s += s;
  }
  if (err != 0) throw std::runtime_error("writing " + path.string() + " failed: " + errno_text(err));
  const double t1 = steady_seconds();
  times.write_s = t1 - t0;
  if (options.fsync) {
    if (::fsync(plain.fd) != 0) throw std::runtime_error("fsync of " + path.string() + " failed: " + errno_text(errno));
    times.fsync_s = steady_seconds() - t1;
  }
  if (::close(plain.fd) != 0) {
    plain.fd = -1;
    throw std::runtime_error("closing " + path.string() + " failed: " + errno_text(errno));
  }
  plain.fd = -1;
  return times;
}

ReadTimes read_file(const fs::path& path, std::byte* into, std::size_t bytes, bool try_direct, unsigned threads,
                    std::size_t chunk) {
  ReadTimes times;
  Fd plain(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (plain.fd < 0) throw std::runtime_error("cannot open " + path.string() + ": " + errno_text(errno));
  struct stat st {};
  if (::fstat(plain.fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) < bytes)
    throw std::runtime_error(path.string() + " is shorter than " + std::to_string(bytes) + " bytes");
  Fd direct(try_direct ? ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT) : -1);
  times.direct = direct.fd >= 0;
  // Clean pages of a file that was just fsynced can be dropped; dirty or
  // tmpfs pages cannot, which is why the row says whether the read was direct.
  (void)::posix_fadvise(plain.fd, 0, 0, POSIX_FADV_DONTNEED);
  const double t0 = steady_seconds();
  std::size_t direct_end = 0;
  int err = 0;
  if (times.direct) {
    direct_end = bytes / kAlign * kAlign;
    err = parallel_io<false>(direct.fd, into, 0, direct_end, threads, aligned_chunk(chunk));
  }
  if (err == 0) err = parallel_io<false>(plain.fd, into, direct_end, bytes, threads, chunk);
  if (err != 0) throw std::runtime_error("reading " + path.string() + " failed: " + errno_text(err));
  times.read_s = steady_seconds() - t0;
  return times;
}

bool supports_direct_io(const fs::path& dir) {
  const fs::path probe = dir / (".redline-direct-probe-" + host_and_pid());
  Fd fd(::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_DIRECT, 0644));
  const bool ok = fd.fd >= 0;
  if (ok || errno != ENOENT) ::unlink(probe.c_str());
  return ok;
}

unsigned io_threads(std::uint64_t bytes, unsigned threads, std::size_t chunk) {
  const std::uint64_t chunks = chunk == 0 ? 1 : (bytes + chunk - 1) / chunk;
  return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(threads, chunks)));
}

std::optional<std::string> memory_file_system(const fs::path& dir) {
  // linux/magic.h's TMPFS_MAGIC and RAMFS_MAGIC.
  constexpr unsigned long kTmpfs = 0x01021994, kRamfs = 0x858458f6;
  struct statfs info {};
  if (::statfs(dir.c_str(), &info) != 0) return std::nullopt;
  const auto type = static_cast<unsigned long>(info.f_type);
  if (type == kTmpfs) return "tmpfs";
  if (type == kRamfs) return "ramfs";
  return std::nullopt;
}

std::optional<std::string> directory_problem(const fs::path& dir, bool writes) {
  std::error_code ec;
  const auto status = fs::status(dir, ec);
  if (ec || !fs::exists(status)) return "does not exist";
  if (!fs::is_directory(status)) return "is not a directory";
  if (!writes) return std::nullopt;
  if (const auto problem = file_creation_problem(dir / (".redline-probe-" + host_and_pid())))
    return "is not writable (" + *problem + ")";
  return std::nullopt;
}

CheckpointPaths checkpoint_paths(const fs::path& dir, const std::string& name) {
  return {dir / name, dir / ("." + name + ".redline-tmp"), dir / (name + ".manifest"),
          dir / ("." + name + ".manifest.redline-tmp"), dir / ("." + name + ".redline-previous")};
}

std::optional<std::string> foreign_checkpoint_problem(const fs::path& dir, const std::string& name) {
  const CheckpointPaths paths = checkpoint_paths(dir, name);
  std::error_code ec;
  // symlink_status: a link in the checkpoint's place is the user's, wherever it points.
  const auto data = fs::symlink_status(paths.data, ec), manifest = fs::symlink_status(paths.manifest, ec);
  if (!fs::exists(data) && !fs::exists(manifest)) return std::nullopt;
  if (fs::exists(data) && !fs::is_regular_file(data)) return paths.data.string() + " exists and is not a file";
  if (!fs::exists(manifest))
    return paths.data.string() + " exists without a redline manifest (" + paths.manifest.filename().string() + ")";
  const std::string not_a_redline_manifest =
      fs::exists(data) ? paths.data.string() + " exists and " + paths.manifest.string() + " is not a redline manifest of it"
                       : paths.manifest.string() + " exists and is not a redline manifest";
  if (!fs::is_regular_file(manifest)) return not_a_redline_manifest;
  Manifest m;
  try {
    m = read_manifest(dir, name);
  } catch (const CheckpointRejected&) {
    return not_a_redline_manifest;
  }
  if (!fs::exists(data)) return std::nullopt;  // a redline manifest whose data is gone
  const auto size = fs::file_size(paths.data, ec);
  if (ec || size != m.bytes)
    return paths.data.string() + " is not the checkpoint its redline manifest describes (" + std::to_string(size) +
           " bytes, the manifest says " + std::to_string(m.bytes) + ")";
  return std::nullopt;
}

void refuse_foreign_checkpoint(const fs::path& dir, const std::string& name) {
  if (const auto problem = foreign_checkpoint_problem(dir, name))
    throw CheckpointRejected(*problem + ": refusing to replace a file redline did not write (--overwrite replaces it)");
}

double release_previous_checkpoint(const fs::path& dir, const std::string& name) {
  const fs::path previous = checkpoint_paths(dir, name).previous;
  const double t = steady_seconds();
  if (::unlink(previous.c_str()) != 0 && errno != ENOENT)
    throw std::runtime_error("removing " + previous.string() + " failed: " + errno_text(errno));
  return steady_seconds() - t;
}

namespace {

// Version 2: the data's name and size, then an XXH64 per chunk.
std::string manifest_text(const std::string& name, std::size_t bytes, const ChunkChecksums& checksums) {
  std::ostringstream manifest;
  manifest << "redline-checkpoint 2\nfile " << name << "\nbytes " << bytes << "\nchunk " << checksums.chunk
           << "\nxxh64";
  for (std::uint64_t h : checksums.xxh64) manifest << ' ' << hex64(h);
  manifest << "\n";
  return manifest.str();
}

// How far the renames got, for the clean-up after a failure.
struct Renames {
  bool linked = false;        // the previous data also has its second name
  bool data_renamed = false;  // the new data is under the checkpoint's name
};

// The manifest's rename failed after the data's. The old manifest is still in
// place: put the old data back beside it, durably, so the previous checkpoint
// stays whole; the error says what became of it.
[[noreturn]] void put_previous_back(const fs::path& dir, const CheckpointPaths& paths, Renames& renames, int err) {
  std::string what = "renaming " + paths.manifest_temp.string() + " to " + paths.manifest.string() +
                     " failed: " + errno_text(err);
  if (renames.linked && ::rename(paths.previous.c_str(), paths.data.c_str()) == 0) {
    renames.linked = false;
    try {
      fsync_directory(dir);
    } catch (const std::exception&) {
      // The data is back under its name; only its durability is unsure.
    }
    what += "; the previous checkpoint is back in place";
  } else if (renames.linked) {
    what += "; the previous checkpoint's data is kept as " + paths.previous.string();
  }
  throw std::runtime_error(what);
}

// A second name for the previous data (a leftover of a crashed save goes
// first): the data's rename then does not free its blocks inside the stall,
// and a manifest rename that fails can put it back. Where hard links are
// refused, the rename frees it as before. Then the data and the manifest are
// renamed in, back to back.
void rename_into_place(const fs::path& dir, const std::string& name, const CheckpointPaths& paths,
                       Renames& renames) {
  release_previous_checkpoint(dir, name);
  renames.linked = ::link(paths.data.c_str(), paths.previous.c_str()) == 0;
  if (::rename(paths.temp.c_str(), paths.data.c_str()) != 0)
    throw std::runtime_error("renaming " + paths.temp.string() + " to " + paths.data.string() +
                             " failed: " + errno_text(errno));
  renames.data_renamed = true;
  if (::rename(paths.manifest_temp.c_str(), paths.manifest.c_str()) != 0) put_previous_back(dir, paths, renames, errno);
}

// After a failed save: the temporary files go, and the second name of the
// previous data goes when the data's own name still holds that data (nothing
// was renamed); after a failed put-back it is the last copy.
void remove_failed_save(const CheckpointPaths& paths, const Renames& renames) {
  std::error_code ec;
  fs::remove(paths.temp, ec);
  fs::remove(paths.manifest_temp, ec);
  if (renames.linked && !renames.data_renamed) fs::remove(paths.previous, ec);
}

}  // namespace

SaveSteps safe_save(const fs::path& dir, const std::string& name, const std::byte* data, std::size_t bytes,
                    const WriteOptions& options, PreviousData previous) {
  const CheckpointPaths paths = checkpoint_paths(dir, name);
  SaveSteps steps;
  // Before the clock: not the save's cost.
  const RemovedOnForcedExit temp_on_forced_exit(paths.temp.c_str());
  const RemovedOnForcedExit manifest_temp_on_forced_exit(paths.manifest_temp.c_str());
  const double t0 = steady_seconds();
  // The last good checkpoint stays intact until both new files are durable
  // under their (hidden) temporary names: a save that fails before the
  // renames (a full disk, a killed writer) leaves the old data and manifest
  // as they were. The two renames then follow back to back: only a crash
  // between them (or the filesystem reordering them before the directory
  // fsync) leaves data and manifest that disagree, which restore refuses; it
  // never accepts a mismatch.
  Renames renames;
  try {
    ChunkChecksums checksums;
    const WriteTimes w = write_file(paths.temp, data, bytes, options, &checksums);
    steps.write_s = w.write_s;
    steps.fsync_file_s = w.fsync_s;
    const std::size_t writers =
        std::max<std::size_t>(1, std::min<std::size_t>(options.threads, checksums.xxh64.size()));
    steps.checksum_s = checksums.hashing_s / static_cast<double>(writers);

    double t = steady_seconds();
    // Always fsynced: --no-fsync leaves only the data's fsync out.
    write_durably(paths.manifest_temp, manifest_text(name, bytes, checksums));
    steps.manifest_s = steady_seconds() - t;

    t = steady_seconds();
    rename_into_place(dir, name, paths, renames);
    steps.kept_previous = renames.linked;
    steps.rename_s = steady_seconds() - t;
  } catch (...) {
    remove_failed_save(paths, renames);
    throw;
  }
  // One directory fsync makes both renames durable; it is the manifest's, so
  // --no-fsync keeps it too.
  const double t = steady_seconds();
  fsync_directory(dir);
  steps.fsync_dir_s = steady_seconds() - t;
  if (previous == PreviousData::release) {
    steps.release_previous_s = release_previous_checkpoint(dir, name);
    steps.kept_previous = false;
  }
  steps.total_s = steady_seconds() - t0;
  return steps;
}

Manifest read_manifest(const fs::path& dir, const std::string& name) {
  const CheckpointPaths paths = checkpoint_paths(dir, name);
  std::ifstream in(paths.manifest);
  // Only data without a manifest is a save that did not complete; with neither, there is none.
  if (!in && !fs::exists(paths.data)) throw CheckpointRejected("there is no checkpoint " + paths.data.string());
  if (!in)
    throw CheckpointRejected("checkpoint " + paths.data.string() + " has no manifest " + paths.manifest.string() +
                             ": the save did not complete");
  Manifest m;
  std::string magic, key;
  std::string version;
  const auto malformed = [&] { return CheckpointRejected("manifest " + paths.manifest.string() + " is malformed"); };
  if (!(in >> magic >> version) || magic != "redline-checkpoint" || (version != "1" && version != "2") ||
      !(in >> key >> m.file) || key != "file" || !(in >> key >> m.bytes) || key != "bytes")
    throw malformed();
  if (version == "2" && (!(in >> key >> m.chunk) || key != "chunk" || m.chunk == 0)) throw malformed();
  if (!(in >> key) || key != "xxh64") throw malformed();
  // Version 1: one checksum of the whole file; 2: one per chunk.
  // (bytes - 1) / chunk + 1, not (bytes + chunk - 1) / chunk: a chunk near
  // 2^64 must not wrap to "no checksums to check".
  const std::uint64_t expected = version == "1" ? 1 : m.bytes == 0 ? 0 : (m.bytes - 1) / m.chunk + 1;
  for (std::string hex; m.xxh64.size() < expected && in >> hex;) {
    std::size_t used = 0;
    std::uint64_t value = 0;
    try {
      value = std::stoull(hex, &used, 16);
    } catch (const std::exception&) {
      used = 0;
    }
    if (hex.size() != 16 || used != hex.size())
      throw CheckpointRejected("manifest " + paths.manifest.string() + " has a malformed checksum '" + hex + "'");
    m.xxh64.push_back(value);
  }
  if (std::string extra; m.xxh64.size() != expected || in >> extra) throw malformed();
  if (m.file != name)
    throw CheckpointRejected("manifest " + paths.manifest.string() + " describes '" + m.file + "', not '" + name + "'");
  return m;
}

RestoreSteps restore_checkpoint(const fs::path& dir, const std::string& name, AlignedBuffer& into, unsigned threads,
                                std::size_t chunk) {
  const Manifest m = read_manifest(dir, name);
  // The size first: a manifest's claim is not allocated before the file
  // backs it.
  const fs::path data = checkpoint_paths(dir, name).data;
  std::error_code ec;
  const auto actual = fs::file_size(data, ec);
  if (ec) throw CheckpointRejected("checkpoint " + data.string() + " is missing: " + ec.message());
  if (actual != m.bytes)
    throw CheckpointRejected("checkpoint " + data.string() + " is torn: " + std::to_string(actual) +
                             " bytes, the manifest says " + std::to_string(m.bytes));
  // The target is allocated and poisoned before the clock starts: a restore
  // into resident memory, and a read that delivers nothing cannot pass the
  // checksum on what the buffer held before.
  if (into.size() != m.bytes) into = AlignedBuffer(m.bytes);
  std::memset(into.data(), 0x5A, m.bytes);
  const double t0 = steady_seconds();
  RestoreSteps steps;
  steps.bytes = m.bytes;
  const ReadTimes r = read_file(data, into.data(), m.bytes, true, threads, chunk);
  steps.read_s = r.read_s;
  steps.direct = r.direct;
  const double t = steady_seconds();
  // Per-chunk checksums are checked on `threads` threads; a version 1
  // manifest's single checksum covers the whole file.
  const std::size_t hashed = m.chunk == 0 ? std::max<std::uint64_t>(m.bytes, 1) : m.chunk;
  std::vector<std::uint64_t> sums(m.xxh64.size());
  const unsigned workers = static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(threads, sums.size())));
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (std::size_t c = w; c < sums.size(); c += workers) {
        const std::size_t offset = c * hashed;
        sums[c] = xxh64(into.data() + offset, std::min<std::size_t>(hashed, m.bytes - offset));
      }
    });
  for (auto& worker : pool) worker.join();
  steps.verify_s = steady_seconds() - t;
  for (std::size_t c = 0; c < sums.size(); ++c)
    if (sums[c] != m.xxh64[c]) {
      const std::size_t offset = c * hashed, end = std::min<std::size_t>(offset + hashed, m.bytes);
      throw CheckpointRejected("checkpoint " + data.string() + " is corrupt: bytes " + std::to_string(offset) + ".." +
                               std::to_string(end) + " have XXH64 " + hex64(sums[c]) + ", the manifest says " +
                               hex64(m.xxh64[c]));
    }
  steps.total_s = steady_seconds() - t0;
  return steps;
}

}  // namespace redline
