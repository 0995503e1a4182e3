#include "harness/profile/device_choice.hpp"

#include <algorithm>
#include <map>

#include "harness/core/usage_error.hpp"

namespace redline::profile {

std::optional<std::string> keep_one_device(Trace& trace, std::optional<int> wanted) {
  std::map<int, std::int64_t> gpu_ns;
  for (const Activity& a : trace.activities)
    if (a.is_gpu_work()) gpu_ns[a.device] += a.duration_ns();
  std::string devices;
  for (const auto& [device, ns] : gpu_ns) devices += (devices.empty() ? "" : ", ") + std::to_string(device);
  if (wanted && gpu_ns.count(*wanted) == 0)
    throw UsageError("--device", std::to_string(*wanted),
                     gpu_ns.empty() ? "the trace holds no GPU work" : "ran nothing in the trace (devices: " + devices + ")");
  if (!wanted && gpu_ns.size() <= 1) return std::nullopt;
  const int kept = wanted ? *wanted
                          : std::max_element(gpu_ns.begin(), gpu_ns.end(), [](const auto& a, const auto& b) {
                              return a.second < b.second;
                            })->first;
  std::erase_if(trace.activities, [&](const Activity& a) { return a.is_gpu_work() && a.device != kept; });
  std::erase_if(trace.kernel_correlations, [&](const KernelCorrelation& k) { return k.device != kept; });
  if (gpu_ns.size() <= 1) return std::nullopt;
  return "the trace holds GPU work on devices " + devices + "; this profile is device " + std::to_string(kept) +
         "'s" + (wanted ? " (--device)" : " (the most GPU time; --device N profiles another)");
}

}  // namespace redline::profile
