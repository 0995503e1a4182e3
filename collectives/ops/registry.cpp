// The list of collectives, in nccl-tests' order, and lookup by name.
#include <cctype>
#include <memory>
#include <string>

#include "collectives/ops/collective.hpp"

namespace redline {

// One factory per collective file.
std::unique_ptr<Collective> make_all_reduce();
std::unique_ptr<Collective> make_all_gather();
std::unique_ptr<Collective> make_reduce_scatter();
std::unique_ptr<Collective> make_broadcast();
std::unique_ptr<Collective> make_reduce();
std::unique_ptr<Collective> make_alltoall();
std::unique_ptr<Collective> make_sendrecv();

namespace {

// "all_reduce", "allreduce", "All-Reduce" and "all_to_all" all read alike:
// nccl-tests' binaries spell them without separators.
std::string spelling_key(std::string_view name) {
  std::string key;
  for (char ch : name) {
    if (ch == '_' || ch == '-') continue;
    key += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return key;
}

std::vector<std::unique_ptr<Collective>> make_all() {
  std::vector<std::unique_ptr<Collective>> all;
  all.push_back(make_all_reduce());
  all.push_back(make_all_gather());
  all.push_back(make_reduce_scatter());
  all.push_back(make_broadcast());
  all.push_back(make_reduce());
  all.push_back(make_alltoall());
  all.push_back(make_sendrecv());
  return all;
}

}  // namespace

const std::vector<std::unique_ptr<Collective>>& all_collectives() {
  static const std::vector<std::unique_ptr<Collective>> kAll = make_all();
  return kAll;
}

const Collective* find_collective(std::string_view name) {
  const std::string key = spelling_key(name);
  if (key.empty()) return nullptr;
  for (const auto& c : all_collectives()) {
    if (spelling_key(c->name()) == key) return c.get();
  }
  return nullptr;
}

}  // namespace redline
