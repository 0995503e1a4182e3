// The bootstrap of a run with one process and no launcher: rank 0 of 1.
#pragma once

#include <memory>

#include "collectives/bootstrap/bootstrap.hpp"

namespace redline {

// abort_all ends the process with std::_Exit: no destructors, no stdio flush
// (the caller flushes what it must first).
std::unique_ptr<Bootstrap> make_single_bootstrap();

}  // namespace redline
