// Everything after the ranks have met: the backend, the sweep under the
// watchdog, the reports, and what a failure of one rank does to the others.
#pragma once

#include "bench/allreduce/flags.hpp"
#include "collectives/bootstrap/bootstrap.hpp"

namespace redline::allreduce {

// A usage error here comes from the same flags and the same gathered facts on
// every rank, so every rank raises it at the same place and ends normally
// (only rank 0 prints it). Any other failure is this rank's alone: it must not
// leave the others waiting in a collective, so the run is aborted, after rank
// 0 saved what it measured.
int run_ranks(const Flags& f, Plan& plan, Bootstrap& bootstrap);

}  // namespace redline::allreduce
