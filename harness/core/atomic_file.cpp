#include "harness/core/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "harness/core/interrupt.hpp"

namespace redline {
namespace {

[[noreturn]] void fail(const std::string& step, const std::filesystem::path& path, int err) {
  throw std::runtime_error("cannot write " + path.string() + ": " + step + " failed: " + std::strerror(err));
}

}  // namespace

void fsync_directory(const std::filesystem::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) fail("open directory", dir, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) fail("fsync directory", dir, err);
}

std::string host_and_pid() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::strcpy(host, "host");
  return std::string(host) + "-" + std::to_string(::getpid());
}

std::filesystem::path temporary_name_for(const std::filesystem::path& path) {
  return path.string() + ".tmp." + host_and_pid();
}

std::optional<std::string> file_creation_problem(const std::filesystem::path& probe) {
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot create " + probe.filename().string() + ": " + std::strerror(errno);
  ::close(fd);
  if (::unlink(probe.c_str()) != 0) return "cannot delete " + probe.filename().string() + ": " + std::strerror(errno);
  return std::nullopt;
}

namespace {

// Writes and fsyncs `content` as `tmp`; errors name `path`, the file the
// caller asked for. `tmp` is removed on failure.
void write_and_fsync(const std::filesystem::path& tmp, std::string_view content, const std::filesystem::path& path) {
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("create " + tmp.string(), path, errno);

  auto abandon = [&](const std::string& step, int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(step, path, err);
  };
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      abandon("write", errno);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) abandon("fsync", errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("close", path, err);
  }
}

}  // namespace

void write_durably(const std::filesystem::path& file, std::string_view content) {
  write_and_fsync(file, content, file);
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  const auto dir = path.parent_path();
  std::error_code ec;
  if (!dir.empty()) {
    std::filesystem::create_directories(dir, ec);
    if (ec) fail("create directory " + dir.string(), path, ec.value());
  }
  const std::filesystem::path tmp = temporary_name_for(path);
  // A second signal while the report is written ends the process at once:
  // the half-written temporary file goes with it.
  const RemovedOnForcedExit removed_on_forced_exit(tmp.c_str());
  write_and_fsync(tmp, content, path);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("rename", path, err);
  }
  fsync_directory(dir);
}

void append_file_atomically(const std::filesystem::path& path, std::string_view lines) {
  std::string content;
  if (std::filesystem::exists(path)) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("read", path, errno);
    std::ostringstream old;
    old << in.rdbuf();
    content = old.str();
  }
  content.append(lines);
  write_file_atomically(path, content);
}

}  // namespace redline
