#include "collectives/faults/injected_faults.hpp"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>
#include <utility>

#include "collectives/ops/verify.hpp"
#include "harness/core/units.hpp"
#include "harness/core/usage_error.hpp"

namespace redline {
namespace {

[[noreturn]] void hang_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

int rank_in(const char* flag, const std::string& text) {
  return static_cast<int>(parse_count_between(flag, text, 0, 1 << 20));
}

// "RANK:VALUE" -> {RANK, VALUE}.
std::pair<int, std::string> rank_and_value(const char* flag, const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) throw UsageError(flag, text, "expected RANK:VALUE");
  return {rank_in(flag, text.substr(0, colon)), text.substr(colon + 1)};
}

int signal_named(const std::string& flag_text, const std::string& name) {
  for (const auto& [known, number] :
       {std::pair<const char*, int>{"STOP", SIGSTOP}, {"KILL", SIGKILL}, {"INT", SIGINT}, {"TERM", SIGTERM}})
    if (name == known) return number;
  throw UsageError("--inject-signal", flag_text, "expected RANK:BYTES:SIGNAL with SIGNAL one of STOP, KILL, INT, TERM");
}

class InjectedFaults final : public FaultHooks {
 public:
  InjectedFaults(const FaultPlan& plan, int rank) : plan_(plan), rank_(rank) {}

  void before_stage(RunStage stage) override {
    if (rank_ == plan_.hang_rank && plan_.hang_stage == stage) hang_forever();  // never reaches it
  }
  void before_point(std::size_t bytes) override {
    if (hang_at(bytes) && !plan_.hang_in_place) hang_forever();
    if (rank_ == plan_.exit_rank && bytes == plan_.exit_bytes) std::_Exit(3);  // dies before it
    signal_due_ = rank_ == plan_.signal_rank && bytes == plan_.signal_bytes;
  }
  void before_in_place(std::size_t bytes) override {
    if (hang_at(bytes) && plan_.hang_in_place) hang_forever();
  }
  void before_timed_operation() override {
    if (signal_due_) {
      signal_due_ = false;  // once: a stopped rank that is continued goes on
      std::raise(plan_.signal);
    }
    if (rank_ == plan_.delay_rank)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(plan_.delay_ms));
  }
  void after_check_input(void* host, std::size_t count, DataType type) override {
    // What a bad link or GPU would do: the check must catch it.
    if (rank_ == plan_.wrong_rank && count > 0) fill_poison(host, 1, type);
  }
  void before_abort() override {
    if (plan_.stuck_abort) hang_forever();  // an ncclCommAbort that blocks
  }

 private:
  bool hang_at(std::size_t bytes) const {
    return rank_ == plan_.hang_rank && !plan_.hang_stage && bytes == plan_.hang_bytes;
  }

  FaultPlan plan_;
  int rank_;
  bool signal_due_ = false;
};

}  // namespace

bool FaultPlan::any() const {
  return delay_rank >= 0 || hang_rank >= 0 || exit_rank >= 0 || signal_rank >= 0 || wrong_rank >= 0 || stuck_abort;
}

FaultPlan parse_fault_flags(const FaultFlags& flags) {
  FaultPlan plan;
  if (!flags.delay.empty()) {
    const auto [rank, ms] = rank_and_value("--inject-delay", flags.delay);
    plan.delay_rank = rank;
    plan.delay_ms = parse_number("--inject-delay", ms);
  }
  if (!flags.hang.empty()) {
    const auto [rank, where] = rank_and_value("--inject-hang", flags.hang);
    plan.hang_rank = rank;
    if (where == "init")
      plan.hang_stage = RunStage::init;
    else if (where == "split")
      plan.hang_stage = RunStage::split;
    else if (where == "warmup")
      plan.hang_stage = RunStage::warmup;
    else {
      const auto colon = where.find(':');
      plan.hang_bytes = parse_size("--inject-hang", where.substr(0, colon));
      plan.hang_in_place = colon != std::string::npos;
      if (plan.hang_in_place && where.substr(colon + 1) != "in-place")
        throw UsageError("--inject-hang", flags.hang, "expected RANK:BYTES[:in-place], or RANK:init|split|warmup");
    }
  }
  if (!flags.exit.empty()) {
    const auto [rank, bytes] = rank_and_value("--inject-exit", flags.exit);
    plan.exit_rank = rank;
    plan.exit_bytes = parse_size("--inject-exit", bytes);
  }
  if (!flags.signal.empty()) {
    const auto [rank, rest] = rank_and_value("--inject-signal", flags.signal);
    const auto colon = rest.find(':');
    if (colon == std::string::npos) signal_named(flags.signal, "");
    plan.signal_rank = rank;
    plan.signal_bytes = parse_size("--inject-signal", rest.substr(0, colon));
    plan.signal = signal_named(flags.signal, rest.substr(colon + 1));
  }
  if (!flags.wrong.empty()) plan.wrong_rank = rank_in("--inject-wrong", flags.wrong);
  plan.stuck_abort = flags.stuck_abort;
  return plan;
}

std::unique_ptr<FaultHooks> make_injected_faults(const FaultPlan& plan, int rank) {
  return std::make_unique<InjectedFaults>(plan, rank);
}

}  // namespace redline
