#include "harness/core/progress.hpp"

#include <unistd.h>

#include <iostream>

namespace redline {

Progress::Progress(int forced) : enabled_(forced < 0 ? isatty(STDERR_FILENO) != 0 : forced != 0) {}

void Progress::line(const std::string& text) const {
  if (enabled_) std::cerr << text << '\n' << std::flush;
}

}  // namespace redline
