// The model train_step_bench's subcommands build, from the flags they share:
// --preset NAME, or the shape flags (--hidden --heads --kv-heads --ffn
// --layers --vocab), where shape flags given with a preset override it
// (--layers 2: two of llama3-70b's layers, with its embedding and logits);
// --seq, --mbs. Checked here: each bad value a UsageError naming the flag.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "harness/train/model_config.hpp"

namespace redline::train {

struct ModelFlags {
  std::string preset, hidden, heads, kv_heads, ffn, layers, vocab, seq = "4096", mbs = "1";
};

// The shape flags and --seq: every subcommand's.
void add_model_flags(CLI::App& sub, ModelFlags& flags);
// --mbs: memory's and run's; sweep picks the micro-batch itself.
void add_mbs_flag(CLI::App& sub, ModelFlags& flags);
ModelConfig model_of(const ModelFlags& flags);
std::int64_t seq_of(const ModelFlags& flags);
std::int64_t mbs_of(const ModelFlags& flags);

// --gpu-memory GiB in bytes (memory's and sweep's), nullopt when left out;
// from 0.001 GiB to the 64 TiB the memory model counts (kMostTensorBytes), so
// its largest fit is exact.
std::optional<std::int64_t> gpu_memory_bytes_of(const std::string& text);

// A micro-batch of `mbs` x `seq` tokens of `config` the memory model can
// count (memory_countable): a UsageError naming --seq and `mbs_flag` (--mbs,
// or sweep's --max-mbs) with their values otherwise.
void require_countable(const ModelConfig& config, std::int64_t seq, const char* mbs_flag, std::int64_t mbs,
                       AttentionChoice attention);

}  // namespace redline::train
