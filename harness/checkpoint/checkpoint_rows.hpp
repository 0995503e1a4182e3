// What every checkpoint stage's row shares: the run's configuration, the
// row's parameter columns, and the median round a stage made of rounds shows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/report/report.hpp"

namespace redline {

struct CheckpointConfig {
  std::filesystem::path dir;
  std::uint64_t bytes = 0;
  unsigned threads = 4;
  std::size_t chunk = 64u << 20;
  bool fsync = true;
  std::string name = "checkpoint.bin";
  // --overwrite: a save may replace a file redline did not write there.
  bool may_replace_foreign = false;
  // Rounds of (raw write + fsync, safe save), alternating: the save is
  // judged against the storage as it is at the same moment.
  unsigned rounds = 3;
};

// A row with only the parameters every checkpoint row carries: stage, bytes,
// threads (those that ran: at most one per chunk, io_threads), chunk, fsync.
Row checkpoint_params_row(const std::string& stage, std::uint64_t bytes, unsigned threads, std::size_t chunk,
                          bool fsync);

// The parameters plus metrics time_s and GBps (1e9 B/s).
Row checkpoint_stage_row(const std::string& stage, std::uint64_t bytes, unsigned threads, std::size_t chunk,
                         bool fsync, double seconds);

// 1e9 bytes per second; 0 for no time.
double gbps(std::uint64_t bytes, double seconds);

// The index of the median of `seconds` (the lower middle one for an even
// count): the round whose steps a stage shows. Every stage figure from
// rounds (raw, save, restore) is this round's, so a row's steps add up to
// it and the save and raw medians compared are of one kind.
std::size_t median_round(const std::vector<double>& seconds);

// "median of 4 rounds (the lower middle one)": the note of a row from rounds.
std::string median_note(std::size_t rounds);

}  // namespace redline
