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

// The first half of write_file_atomically, for callers that commit several
// files together: writes and fsyncs `content` as `file` (a temporary name the
// caller later renames, then fsyncs the directory). Throws as
// write_file_atomically, removing `file`.
void write_durably(const std::filesystem::path& file, std::string_view content);

// fsync of a directory: makes a rename or a new name in it durable. Throws
// std::runtime_error naming the directory.
void fsync_directory(const std::filesystem::path& dir);

// "<host>-<pid>", for the names of files a process writes beside others':
// processes on several hosts sharing a filesystem never pick the same name.
std::string host_and_pid();

// The name write_file_atomically writes `path`'s content under before its
// rename (in the same directory).
std::filesystem::path temporary_name_for(const std::filesystem::path& path);

// Why the file `probe` cannot be created and deleted ("cannot create NAME:
// Read-only file system"), found by doing it: root ignores permission bits,
// so access(2) would say yes to a read-only mount. Name the probe as the real
// file will be named (a name too long fails here too); a leftover of that
// name is this process's own and is removed. std::nullopt when it can.
std::optional<std::string> file_creation_problem(const std::filesystem::path& probe);

// Appends by rewriting atomically (old content + `lines`), for files such as
// a history that must never be left half-appended.
void append_file_atomically(const std::filesystem::path& path, std::string_view lines);

}  // namespace redline
