// A world of one: every operation is a copy or nothing.
#include "collectives/bootstrap/single_bootstrap.hpp"

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace redline {
namespace {

class SingleBootstrap final : public Bootstrap {
 public:
  std::string kind() const override { return "single"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }

  std::vector<char> all_gather(const void* mine, std::size_t bytes) override {
    std::vector<char> all(bytes);
    if (bytes) std::memcpy(all.data(), mine, bytes);
    return all;
  }
  void broadcast(void*, std::size_t, int root) override {
    if (root != 0)
      throw std::runtime_error("broadcast root " + std::to_string(root) + " is out of range for world size 1");
  }
  void barrier() override {}
  [[noreturn]] void abort_all(int exit_code) override { std::_Exit(exit_code); }
};

}  // namespace

std::unique_ptr<Bootstrap> make_single_bootstrap() { return std::make_unique<SingleBootstrap>(); }

}  // namespace redline
