// Where the watchdog talks to the other ranks: the bootstrap's own
// connections when it has them (the env bootstrap's RankLinks), so no rank
// opens a second connection to rank 0; else (MPI, whose traffic is not ours to
// share) a star of TCP connections made for the run, rank 0's port and address
// passed round through the bootstrap.
#pragma once

#include <memory>

#include "collectives/bootstrap/bootstrap.hpp"
#include "collectives/watchdog/rank_links.hpp"

namespace redline {

struct ControlLinks {
  RankLinks* links = nullptr;        // the bootstrap's, or `owned`
  std::unique_ptr<RankLinks> owned;  // made here when the bootstrap has none
};

// Collective: every rank calls it. Rank 0 waits up to `register_seconds` for
// the others to connect; the others try for a few seconds at most. Throws std::runtime_error naming what failed (a
// firewall, an address that does not resolve), with what to set instead.
ControlLinks connect_control_links(Bootstrap& bootstrap, double register_seconds = 120);

}  // namespace redline
