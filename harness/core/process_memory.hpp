// What the kernel tells about a child process's memory while it runs: the
// resident memory of its process group (from /proc), and the OOM kills
// counted in our memory cgroup (a trial whose worker the OOM killer ended
// may itself exit with a plain error).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redline {

struct GroupMemory {
  std::vector<int> pids;        // the processes of the group now
  std::uint64_t rss_bytes = 0;  // their resident memory, summed (shared pages count once per process)
};

// The processes whose process group is `pgid`, and their resident memory.
// A process that ends while it is read is left out.
GroupMemory read_process_group(int pgid);

// The "oom_kill" count of the memory cgroup this process is in: cgroup v2's
// memory.events (which counts the cgroups below it too), or cgroup v1's
// memory.oom_control. nullopt where neither can be read.
std::optional<std::uint64_t> cgroup_oom_kill_count();

// The "oom_kill N" line of a memory.events or memory.oom_control text.
std::optional<std::uint64_t> parse_oom_kill_count(const std::string& text);

}  // namespace redline
