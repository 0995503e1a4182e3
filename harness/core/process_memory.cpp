#include "harness/core/process_memory.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace redline {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return in ? text.str() : std::string();
}

struct ProcStat {
  int pgrp = 0;
  std::uint64_t rss_pages = 0;
};

// /proc/PID/stat: the name in parentheses may hold spaces and ')', so the
// fields are counted from the last ')': state is field 3, pgrp 5, rss 24.
std::optional<ProcStat> read_stat(const std::string& pid) {
  const std::string text = read_file("/proc/" + pid + "/stat");
  const auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  ProcStat stat;
  for (int number = 3; number <= 24 && fields >> field; ++number) {
    if (number == 5) stat.pgrp = std::atoi(field.c_str());
    if (number == 24) {
      stat.rss_pages = std::strtoull(field.c_str(), nullptr, 10);
      return stat;
    }
  }
  return std::nullopt;
}

// The memory cgroup's counter file: cgroup v1's memory controller line
// ("4:memory:/path") or the unified hierarchy's ("0::/path").
std::optional<std::string> oom_counter_file() {
  std::istringstream lines(read_file("/proc/self/cgroup"));
  std::optional<std::string> unified;
  for (std::string line; std::getline(lines, line);) {
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1), path = line.substr(second + 1);
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');)
      if (name == "memory") return "/sys/fs/cgroup/memory" + path + "/memory.oom_control";
    if (controllers.empty() && access("/sys/fs/cgroup/cgroup.controllers", R_OK) == 0)
      unified = "/sys/fs/cgroup" + path + "/memory.events";
  }
  return unified;
}

}  // namespace

GroupMemory read_process_group(int pgid) {
  GroupMemory group;
  DIR* proc = opendir("/proc");
  if (!proc) return group;
  const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  while (const dirent* entry = readdir(proc)) {
    const std::string pid = entry->d_name;
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto stat = read_stat(pid);
    if (!stat || stat->pgrp != pgid) continue;
    group.pids.push_back(std::atoi(pid.c_str()));
    group.rss_bytes += stat->rss_pages * page;
  }
  closedir(proc);
  return group;
}

std::optional<std::uint64_t> parse_oom_kill_count(const std::string& text) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string key;
    std::uint64_t value = 0;
    if (words >> key >> value && key == "oom_kill") return value;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> cgroup_oom_kill_count() {
  const auto file = oom_counter_file();
  if (!file) return std::nullopt;
  return parse_oom_kill_count(read_file(*file));
}

}  // namespace redline
