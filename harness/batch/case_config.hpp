// What tells one batch sweep's configuration from another in the case key,
// so that two configurations never share a history series: the program's
// name (to read) and a hash of everything that changes the figure (the
// command with {bs}, the steps and the metric options).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "harness/batch/batch_sweep.hpp"

namespace redline {

// The script a command runs (the first argument ending in .py or .sh, as in
// `python train.py` or `torchrun ... train.py`), else the program a wrapper
// runs (the last argument with a '/' that is an executable file, as in
// `prlimit --as=8G ./train`), else the command's own file name; only
// letters, digits, '.', '_' and '-' are kept.
std::string program_name(const std::vector<std::string>& command);

// 8 hex digits of a hash of the command (with {bs}, not the batch), --steps,
// and the metric options; the same everywhere for the same configuration.
std::string config_hash(const BatchSweepOptions& options);

// {"program", ...}, {"config", ...}: the case key's parameters after batch_size.
std::vector<std::pair<std::string, std::string>> config_params(const BatchSweepOptions& options);

}  // namespace redline
