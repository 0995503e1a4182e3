// Progress lines on stderr, only when stderr is a terminal (DESIGN: results
// go to stdout and files; logs and pipelines stay clean) unless forced.
#pragma once

#include <string>

namespace redline {

class Progress {
 public:
  // forced: -1 = decide by isatty(stderr), 0 = off, 1 = on.
  explicit Progress(int forced = -1);
  bool enabled() const { return enabled_; }
  void line(const std::string& text) const;

 private:
  bool enabled_;
};

}  // namespace redline
