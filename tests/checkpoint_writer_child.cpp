// A killable checkpoint writer for checkpoint_test: safe_save of SIZE random
// bytes into DIR as NAME, so the test can SIGKILL it mid-save.
// Usage: checkpoint_writer_child DIR NAME SIZE_BYTES
#include <cstdlib>
#include <iostream>

#include "harness/checkpoint/checkpoint_io.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: checkpoint_writer_child DIR NAME SIZE_BYTES\n";
    return 2;
  }
  const std::size_t bytes = std::strtoull(argv[3], nullptr, 10);
  redline::AlignedBuffer state(bytes);
  redline::fill_random(state.data(), bytes, 42, 2);
  try {
    // Small chunks and one thread: the save lasts long enough to be killed.
    redline::safe_save(argv[1], argv[2], state.data(), bytes, {.threads = 1, .chunk = 1u << 20, .fsync = true});
  } catch (const std::exception& e) {
    std::cerr << "checkpoint_writer_child: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
