#include "harness/batch/case_config.hpp"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "harness/core/child_process.hpp"
#include "harness/core/splitmix64.hpp"

namespace redline {
namespace {

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() > tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// Each byte mixed in turn: stable across machines and builds, unlike std::hash.
std::uint64_t hash_text(const std::string& text) {
  std::uint64_t h = text.size();
  for (unsigned char c : text) h = splitmix64(h ^ c);
  return h;
}

// An argument as the key sees it: a path by its last part, so the same
// command from another checkout, build folder or machine keeps its key.
std::string without_folders(const std::string& arg) {
  const std::size_t slash = arg.find_last_of('/');
  return slash == std::string::npos || slash + 1 == arg.size() ? arg : arg.substr(slash + 1);
}

}  // namespace

std::string program_name(const std::vector<std::string>& command) {
  std::string name = command.empty() ? "" : command.front();
  std::optional<std::string> script, program;
  for (std::size_t i = 1; i < command.size(); ++i) {
    const std::string& arg = command[i];
    if (!script && (ends_with(arg, ".py") || ends_with(arg, ".sh"))) script = arg;
    // A wrapper's program (prlimit, env, numactl, torchrun ... PROGRAM).
    if (arg.find('/') != std::string::npos && find_executable(arg)) program = arg;
  }
  if (ends_with(name, ".py") || ends_with(name, ".sh")) script = name;
  name = script ? *script : program ? *program : name;
  std::string kept;
  for (char c : std::filesystem::path(name).filename().string())
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') kept += c;
  return kept.empty() ? "command" : kept;
}

std::string config_hash(const BatchSweepOptions& options) {
  // Fields separated by a byte no argument holds, each named, so that no two
  // configurations can run together into the same text.
  std::string text = "command";
  for (const auto& arg : options.command) text += '\0' + without_folders(arg);
  text += "\x1fsteps=" + std::to_string(options.steps);
  text += "\x1fmetric_regex=" + options.metric_regex + "\x1fmetric_name=" + options.metric_name;
  text += "\x1fstep_time_regex=" + options.step_time_regex + "\x1fstep_time_unit=" + options.step_time_unit;
  text += "\x1fskip_steps=" + std::to_string(options.skip_steps);
  if (options.tokens_per_sample) text += "\x1ftokens_per_sample=" + std::to_string(*options.tokens_per_sample);
  if (options.profiled) text += "\x1fprofiled=1";  // only then: unprofiled sweeps keep their series
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash_text(text)));
  return std::string(hex, 8);
}

std::vector<std::pair<std::string, std::string>> config_params(const BatchSweepOptions& options) {
  return {{"program", program_name(options.command)}, {"config", config_hash(options)}};
}

}  // namespace redline
