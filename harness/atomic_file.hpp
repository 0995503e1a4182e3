// Writes a results file so that readers see either the old file or the whole
// new one, never a truncated one: temporary file in the same directory,
// fsync, rename over the target, fsync the directory.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace redline {

// Creates missing parent directories. Throws std::runtime_error naming the
// path and the failing step; the temporary file is removed on failure.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

// fsync of a directory: makes a rename or a new name in it durable. Throws
// std::runtime_error naming the directory.
void fsync_directory(const std::filesystem::path& dir);

// Why no file can be created and deleted in `dir` ("is not writable
// (Read-only file system)"), found by doing it: root ignores permission bits,
// so access(2) would say yes to a read-only mount. The probe's name carries
// the host and the pid, so processes on several hosts sharing a filesystem
// never collide. std::nullopt when files can come and go there.
std::optional<std::string> file_creation_problem(const std::filesystem::path& dir);

// Appends by rewriting atomically (old content + `lines`), for files such as
// a history that must never be left half-appended.
void append_file_atomically(const std::filesystem::path& path, std::string_view lines);

}  // namespace redline
