// The bootstrap for torchrun-style launches without MPI (containers,
// Kubernetes): ranks find each other through a TCP rendezvous at
// MASTER_ADDR:MASTER_PORT, and rank 0 relays every bootstrap operation
// (a star: fine for the few small control messages a bootstrap carries).
#pragma once

#include <memory>
#include <string>

#include "collectives/bootstrap/bootstrap.hpp"

namespace redline {

// What the environment says about this rank (torchrun's variables).
struct EnvRendezvousConfig {
  int rank = 0;                // RANK
  int world_size = 1;          // WORLD_SIZE
  int local_rank = 0;          // LOCAL_RANK
  int local_world_size = -1;   // LOCAL_WORLD_SIZE; -1 when unset: counted from the ranks' host names
  std::string master_addr;     // MASTER_ADDR: rank 0's host name or address
  int master_port = 0;         // MASTER_PORT
  std::string host_name;       // this rank's host; empty: gethostname()
};

// Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT and the
// optional LOCAL_WORLD_SIZE (MASTER_* only matter when WORLD_SIZE > 1). A
// missing or malformed variable throws std::runtime_error naming it and its value.
EnvRendezvousConfig env_rendezvous_from_environment();

// Joins the rendezvous; returns once every rank has joined.
//
// Rank 0 listens on MASTER_PORT on every interface (as torchrun's TCPStore
// does: a MASTER_ADDR that is this host's name may resolve to 127.0.1.1 here
// but to the real address elsewhere) and waits up to `connect_timeout_s` for
// the others, which retry connecting to MASTER_ADDR:MASTER_PORT for as long.
// Rank 0 checks that the ranks agree on WORLD_SIZE and that no rank or
// (host, LOCAL_RANK) pair comes twice; the error names both sides and reaches
// every rank.
//
// Afterwards every blocking step waits at most `io_timeout_s` (non-zero ranks
// a few seconds more, so rank 0 can tell them which rank it waited for). A rank
// that dies, times out or calls a different operation fails the operation on
// every rank with std::runtime_error naming it ("rank 2 (host h) closed the
// connection"). After such an error the bootstrap refuses further operations.
//
// Operations are called from one thread; abort_all may come from any thread:
// it closes every socket (so the peers' operations fail at once) and _Exits.
// The connections are RankLinks (control_links()): the watchdog sends its
// progress and heartbeats over them too, so each rank holds one connection to
// rank 0, not one per user.
std::unique_ptr<Bootstrap> make_env_bootstrap(const EnvRendezvousConfig& config, double connect_timeout_s = 60,
                                              double io_timeout_s = 300);
// The same, from env_rendezvous_from_environment().
std::unique_ptr<Bootstrap> make_env_bootstrap(double connect_timeout_s = 60, double io_timeout_s = 300);

}  // namespace redline
