// Checkpoint files on storage: random state buffers, timed parallel writes
// and reads (buffered, fsync, O_DIRECT), the safe save (temporary name, fsync,
// rename, directory fsync, per-chunk XXH64 checksums in a manifest written
// last) and the restore that verifies it and refuses a torn or corrupt one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "harness/core/atomic_file.hpp"
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace redline {

// 4096-byte aligned host memory (O_DIRECT needs aligned buffers), freed on
// every exit path.
class AlignedBuffer {
 public:
  static constexpr std::size_t kAlignment = 4096;
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t bytes);  // throws std::bad_alloc
  std::byte* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  struct Free { void operator()(std::byte* p) const; };
  std::unique_ptr<std::byte, Free> data_;
  std::size_t size_ = 0;
};

// Random bytes (SplitMix64 of the index), never a zero page: zeros compress
// and dedupe on some storage and would flatter it. Uses `threads` threads.
void fill_random(std::byte* data, std::size_t bytes, std::uint64_t seed, unsigned threads);

// memcpy split over `threads` threads: the host snapshot of a CPU job, which
// one core copies at a fraction of the memory bandwidth.
void parallel_copy(std::byte* to, const std::byte* from, std::size_t bytes, unsigned threads);

struct WriteOptions {
  unsigned threads = 1;             // writer threads, each taking every threads-th chunk
  std::size_t chunk = 64u << 20;    // bytes per pwrite
  bool fsync = true;                // fsync the file after writing
  bool direct = false;              // O_DIRECT (bypasses the page cache); the unaligned tail is written buffered
};

struct WriteTimes {
  double write_s = 0;
  double fsync_s = 0;
};

// XXH64 of every options.chunk bytes of what write_file wrote (the last
// chunk may be shorter), computed by the writer threads just before each
// chunk's pwrite: the chunk is hot in cache, and hashing overlaps the other
// threads' I/O instead of preceding all of it.
struct ChunkChecksums {
  std::size_t chunk = 0;
  std::vector<std::uint64_t> xxh64;
  double hashing_s = 0;  // summed over the writer threads
};

// Creates or truncates `path` and writes data[0, bytes). Throws
// std::runtime_error naming the path and the error (ENOSPC: "No space left on
// device"); O_DIRECT refused by the filesystem throws DirectIoUnsupported.
// With `checksums` (buffered writes only), fills them.
WriteTimes write_file(const std::filesystem::path& path, const std::byte* data, std::size_t bytes,
                      const WriteOptions& options, ChunkChecksums* checksums = nullptr);

class DirectIoUnsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ReadTimes {
  double read_s = 0;
  bool direct = false;  // false: the read may have been served from the page cache
};

// Reads `bytes` of `path` into `into` (aligned). With try_direct, O_DIRECT
// where the filesystem allows it; otherwise the file's clean cached pages are
// dropped first (posix_fadvise DONTNEED), which works on disk filesystems but
// not on tmpfs. Throws naming the file when it is shorter than `bytes`.
ReadTimes read_file(const std::filesystem::path& path, std::byte* into, std::size_t bytes, bool try_direct,
                    unsigned threads, std::size_t chunk);


// The threads a parallel write or read of `bytes` in `chunk`-sized calls
// really runs: at most one per chunk, at least one. Rows name this count, not
// the one asked for (4 writers of a 16M state in 64M chunks are one).
unsigned io_threads(std::uint64_t bytes, unsigned threads, std::size_t chunk);

// Whether `dir` accepts O_DIRECT opens (tmpfs did not before Linux 6.6).
bool supports_direct_io(const std::filesystem::path& dir);

// "tmpfs" or "ramfs" when `dir` is on a file system held in memory, where
// every read and write, O_DIRECT or not, is memory bandwidth, not storage's;
// std::nullopt otherwise (or when statfs fails).
std::optional<std::string> memory_file_system(const std::filesystem::path& dir);

// Why `dir` cannot hold checkpoints (missing, not a directory, not
// writable), by actually creating and deleting a probe file: root ignores
// permission bits, so access(2) would lie. std::nullopt when it can. With
// `writes` false (a restore only reads) a read-only directory is fine.
std::optional<std::string> directory_problem(const std::filesystem::path& dir, bool writes = true);

// The files of checkpoint `name` in `dir`: the data and its temporary name
// while being written, the manifest (renamed in right after the data) that
// makes it complete and its temporary name, and a second name that keeps the
// previous checkpoint's data until it is released. The temporary names are
// fixed and hidden, so the next save replaces a crashed save's leftovers, and
// say "redline" (.checkpoint.bin.redline-tmp), so a save never replaces or
// removes a file of the user's that a generic name (.checkpoint.bin.tmp)
// could be.
struct CheckpointPaths {
  std::filesystem::path data, temp, manifest, manifest_temp, previous;
};
CheckpointPaths checkpoint_paths(const std::filesystem::path& dir, const std::string& name);

// Why a save of checkpoint `name` into `dir` would replace a file redline did
// not write: the data's name or the manifest's is taken, and no redline
// manifest there describes the data as it is ("/d/checkpoint.bin exists
// without a redline manifest"). std::nullopt when both names are free or hold
// a redline checkpoint (which a save may replace).
std::optional<std::string> foreign_checkpoint_problem(const std::filesystem::path& dir, const std::string& name);
// Throws CheckpointRejected with foreign_checkpoint_problem's reason, if any:
// the check again right before a save, since the one when the flags were read
// may be minutes old by then.
void refuse_foreign_checkpoint(const std::filesystem::path& dir, const std::string& name);

// Each safety step of the synchronous save, costed separately.
struct SaveSteps {
  // checksum_s: the hashing each writer thread did inside write_s (their
  // mean), not a step of its own: the chunks are hashed as they are written.
  double checksum_s = 0, write_s = 0, fsync_file_s = 0, rename_s = 0, fsync_dir_s = 0, manifest_s = 0;
  double release_previous_s = 0;  // freeing the previous checkpoint's data (inside total_s unless deferred)
  bool kept_previous = false;     // deferred: there was previous data, now under CheckpointPaths::previous
  double total_s = 0;
};

// What happens to the previous checkpoint's data, which the rename replaces.
// Freeing a file's blocks costs time (a quarter of a 2 GiB save on this
// project's discard-mounted disks), and nothing needs it inside the stall:
// `defer` keeps the data under CheckpointPaths::previous until
// release_previous_checkpoint, which a trainer runs in the background.
enum class PreviousData { release, defer };

// write to the temporary name (each chunk hashed as it goes) -> fsync file ->
// manifest (data name, size, chunk, an XXH64 per chunk) written and fsynced
// under its temporary name -> rename the data, then the manifest, back to
// back -> fsync dir. The last good checkpoint stays intact until both new
// files are durable; only a crash between the two renames leaves data and
// manifest that disagree, and restore refuses that, so at any moment of a
// crash restore finds a complete checkpoint or refuses. If the manifest's
// rename fails, the previous data (kept under a second name) is renamed
// back. With options.fsync false the data's fsync is skipped (not durable:
// for measuring what it costs); the manifest's fsyncs stay. On failure both
// temporary files are removed and std::runtime_error names the file and step. Buffered writes
// only (options.direct is refused: the chunk checksums are taken as written).
SaveSteps safe_save(const std::filesystem::path& dir, const std::string& name, const std::byte* data,
                    std::size_t bytes, const WriteOptions& options, PreviousData previous = PreviousData::release);

// Frees the previous checkpoint's data kept by a deferred save; seconds taken
// (0 when nothing was kept).
double release_previous_checkpoint(const std::filesystem::path& dir, const std::string& name);

// A checkpoint that must not be used; the message names the file and why.
class CheckpointRejected : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Version 2 holds an XXH64 per `chunk` bytes of the data; version 1 (older
// saves) one XXH64 of the whole file, chunk 0.
struct Manifest {
  std::string file;
  std::uint64_t bytes = 0;
  std::uint64_t chunk = 0;
  std::vector<std::uint64_t> xxh64;
};
// Throws CheckpointRejected when the manifest is absent or malformed.
Manifest read_manifest(const std::filesystem::path& dir, const std::string& name);

struct RestoreSteps {
  double read_s = 0, verify_s = 0, total_s = 0;
  std::uint64_t bytes = 0;
  bool direct = false;
};

// Reads and verifies checkpoint `name` into `into` (resized when needed).
// Throws CheckpointRejected naming the file: no manifest (incomplete save),
// size differs from the manifest (torn), checksum differs (corrupt).
RestoreSteps restore_checkpoint(const std::filesystem::path& dir, const std::string& name, AlignedBuffer& into,
                                unsigned threads, std::size_t chunk);

}  // namespace redline
