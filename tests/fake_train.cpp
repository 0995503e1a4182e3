// A stand-in training program with known behaviour, for batch_sweep's
// integration tests and the bundled suites. Like a real training step, its
// throughput grows with the batch until the GPU is full and then stays flat,
// and above a memory limit it dies the way a framework does. Here the "GPU"
// is a model:
//   step time = step_ms x max(1, batch / saturate_at)
// so throughput doubles with the batch up to saturate_at and is flat above it.
// It really sleeps that long per step, so wall-time throughput works too, and
// it prints each step the way a trainer does (--log-style).
//
//   fake_train [--batch-size N] [--saturate-at 32] [--max-fit 100] [--step-ms 20] [--steps 1]
//              [--first-step-ms 0] [--hang-above N] [--throughput-scale X] [--noise-pct P]
//              [--oom-style pytorch|pytorch-cpu|hip|tensorflow|jax|python|cublas|custom|sigkill|exit137]
//              [--log-style throughput|nanogpt|megatron|lightning|lightning-rich|hf|deepspeed|torchtitan|
//                           step-time|none]
//              [--seq-len 1024] [--mem-fixed BYTES] [--mem-per-sample BYTES] [--report-vm 1]
// Above --max-fit it fails with a simulated out-of-memory error, and says it
// is simulated. With --mem-per-sample it really allocates (and touches)
// --mem-fixed plus that much per sample, so under a real memory limit
// (prlimit --as) it runs out for real; the simulated limit still applies.
// Out of memory wins over a hang. Without --batch-size it reads
// REDLINE_BATCH_SIZE. --first-step-ms adds to the first step (compilation);
// --throughput-scale multiplies the printed throughput (0 gives a broken
// reading of 0); --noise-pct spreads it by +-P% (seeded per process).
// FAKE_TRAIN_HANG_MARKER names a file created when a hang begins.
// The node (a slower, noisier or smaller simulated GPU) can also be set in
// the environment, so the command, and with it batch_sweep's case key, stays
// that of the same configuration: FAKE_TRAIN_THROUGHPUT_SCALE,
// FAKE_TRAIN_NOISE_PCT, FAKE_TRAIN_MAX_FIT and FAKE_TRAIN_STEP_MS (the flags
// win).
// --report-vm 1 prints its peak virtual memory (VmPeak) at the end, for tests
// that set a memory limit (prlimit --as) relative to it.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  long batch = -1, saturate_at = 32, max_fit = 100, steps = 1, hang_above = -1, seq_len = 1024;
  double step_ms = 20, first_step_ms = 0, throughput_scale = 1, noise_pct = 0;
  double mem_fixed = 0, mem_per_sample = 0;
  bool report_vm = false;
  std::string oom_style = "pytorch", log_style = "throughput";
};

bool parse(int argc, char** argv, Options& o) {
  if (const char* v = std::getenv("FAKE_TRAIN_THROUGHPUT_SCALE")) o.throughput_scale = std::atof(v);
  if (const char* v = std::getenv("FAKE_TRAIN_NOISE_PCT")) o.noise_pct = std::atof(v);
  if (const char* v = std::getenv("FAKE_TRAIN_MAX_FIT")) o.max_fit = std::atol(v);
  if (const char* v = std::getenv("FAKE_TRAIN_STEP_MS")) o.step_ms = std::atof(v);
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "--batch-size") o.batch = std::atol(v);
    else if (flag == "--saturate-at") o.saturate_at = std::atol(v);
    else if (flag == "--max-fit") o.max_fit = std::atol(v);
    else if (flag == "--step-ms") o.step_ms = std::atof(v);
    else if (flag == "--first-step-ms") o.first_step_ms = std::atof(v);
    else if (flag == "--steps") o.steps = std::atol(v);
    else if (flag == "--hang-above") o.hang_above = std::atol(v);
    else if (flag == "--oom-style") o.oom_style = v;
    else if (flag == "--log-style") o.log_style = v;
    else if (flag == "--seq-len") o.seq_len = std::atol(v);
    else if (flag == "--throughput-scale") o.throughput_scale = std::atof(v);
    else if (flag == "--noise-pct") o.noise_pct = std::atof(v);
    else if (flag == "--mem-fixed") o.mem_fixed = std::atof(v);
    else if (flag == "--mem-per-sample") o.mem_per_sample = std::atof(v);
    else if (flag == "--report-vm") o.report_vm = std::atoi(v) != 0;
    else {
      std::fprintf(stderr, "fake_train: unknown flag %s\n", flag.c_str());
      return false;
    }
  }
  if (o.batch < 0 && std::getenv("REDLINE_BATCH_SIZE")) o.batch = std::atol(std::getenv("REDLINE_BATCH_SIZE"));
  if (o.batch < 1) {
    std::fprintf(stderr, "fake_train: no batch size (--batch-size or REDLINE_BATCH_SIZE)\n");
    return false;
  }
  return true;
}

// What each framework prints when memory runs out, marked as simulated. Some
// end the process the way the kernel's OOM killer would.
[[noreturn]] void simulated_oom(const Options& o) {
  const double gib = 0.02 * static_cast<double>(o.batch);
  const std::string& s = o.oom_style;
  std::fprintf(stderr, "fake_train: simulating out of memory: batch %ld is above --max-fit %ld\n", o.batch, o.max_fit);
  std::fflush(stderr);
  if (s == "sigkill") kill(getpid(), SIGKILL);
  if (s == "exit137") std::exit(137);
  if (s == "jax")
    std::fprintf(stderr, "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
                         "allocate %.2fGiB (simulated).\n", gib);
  else if (s == "pytorch-cpu")
    std::fprintf(stderr, "RuntimeError: [enforce fail at alloc_cpu.cpp:117] err == 0. DefaultCPUAllocator: can't "
                         "allocate memory: you tried to allocate %.0f bytes (simulated).\n", gib * (1 << 30));
  else if (s == "hip")
    std::fprintf(stderr, "RuntimeError: HIP out of memory (simulated). Tried to allocate %.2f GiB.\n", gib);
  else if (s == "tensorflow")
    std::fprintf(stderr, "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor "
                         "with shape[%ld,1024,1024] (simulated)\n", o.batch);
  else if (s == "python")
    std::fprintf(stderr, "Traceback (most recent call last):\n  File \"train.py\", line 7, in <module>\nMemoryError "
                         "(simulated)\n");
  else if (s == "cublas")
    std::fprintf(stderr, "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)` "
                         "(simulated)\n");
  else if (s == "custom")
    std::fprintf(stderr, "myframework: arena exhausted (wanted %.2f GiB, simulated)\n", gib);
  else
    std::fprintf(stderr,
                 "Traceback (most recent call last):\n  File \"train.py\", line 42, in <module>\n"
                 "    loss = model(batch).loss\n"
                 "torch.OutOfMemoryError: CUDA out of memory (simulated). Tried to allocate %.2f GiB. GPU 0 has a "
                 "total capacity of 79.10 GiB of which 1.23 GiB is free.\n", gib);
  std::exit(1);
}

// Real memory: the model, then each sample's activations, touched so they
// are resident. Under a real limit the allocation fails for real.
std::vector<std::vector<char>> allocate_memory(const Options& o) {
  std::vector<std::vector<char>> blocks;
  if (o.mem_per_sample <= 0) return blocks;
  const auto per_sample = static_cast<std::size_t>(o.mem_per_sample);
  try {
    blocks.emplace_back(static_cast<std::size_t>(o.mem_fixed), '\1');
    blocks.reserve(static_cast<std::size_t>(o.batch) + 1);
    for (long s = 0; s < o.batch; ++s) blocks.emplace_back(per_sample, '\1');
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "fake_train: std::bad_alloc: the memory limit stopped sample %zu of %ld (%zu bytes each)\n",
                 blocks.size(), o.batch, per_sample);
    std::exit(1);
  }
  return blocks;
}

std::string with_commas(long value) {
  std::string digits = std::to_string(value), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// One step's line the way each trainer prints it (Hugging Face prints once, at the end).
void print_step(const Options& o, long step, double seconds, double samples_per_s) {
  const double loss = 2.5 / (1.0 + 0.1 * static_cast<double>(step));
  const std::string& s = o.log_style;
  if (s == "throughput")
    std::printf("step %ld/%ld: loss %.3f, throughput: %.2f samples/s\n", step, o.steps, loss, samples_per_s);
  else if (s == "nanogpt")
    std::printf("iter %ld: loss %.4f, time %.2fms, mfu %.2f%%\n", step - 1, loss, seconds * 1e3, 12.5);
  else if (s == "megatron")
    std::printf(" iteration %8ld/%8ld | consumed samples: %12ld | elapsed time per iteration (ms): %.1f | learning rate:"
                " 1.000E-04 | global batch size: %5ld | lm loss: %.6E |\n", step, o.steps, step * o.batch,
                seconds * 1e3, o.batch, loss);
  else if (s == "lightning")
    std::printf("Epoch 0: %3ld%%|#####     | %ld/%ld [00:01<00:01, %.2fit/s, v_num=0]%s", 100 * step / o.steps, step,
                o.steps, 1.0 / seconds, step == o.steps ? "\n" : "\r");
  else if (s == "lightning-rich")  // rich's bar on a terminal: redrawn each step, "0.00it/s" before the first
    std::printf("%sEpoch 0/-2 \xe2\x94\x81\xe2\x94\x81\xe2\x94\x81 %ld/%ld 0:00:01 \xe2\x80\xa2 0:00:01 %.2fit/s "
                "train_loss: %.3f%s", step == 1 ? "Epoch 0/-2 \xe2\x94\x81 0/1 0:00:00 \xe2\x80\xa2 -:--:-- 0.00it/s\r" : "",
                step, o.steps, 1.0 / seconds, loss, step == o.steps ? "\n" : "\r");
  else if (s == "deepspeed")
    std::printf("[2026-01-01 00:00:00,000] [INFO] [timer.py:260:stop] epoch=0/micro_step=%ld/global_step=%ld, "
                "RunningAvgSamplesPerSec=%.3f, CurrSamplesPerSec=%.3f, MemAllocated=0.0GB, MaxMemAllocated=0.0GB\n",
                step, step, samples_per_s, samples_per_s);
  else if (s == "torchtitan")
    std::printf("[titan] 2026-01-01 00:00:00,000 - root - INFO - step: %2ld  loss: %7.4f  memory:  0.00GiB(0.00%%)  "
                "tps: %s  tflops: 0.00  mfu: 0.00%%\n", step, loss,
                with_commas(static_cast<long>(samples_per_s * static_cast<double>(o.seq_len))).c_str());
  else if (s == "step-time")
    std::printf("step %ld: loss %.3f, step time %.3f ms\n", step, loss, seconds * 1e3);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) return 2;
  std::printf("fake_train: batch size %ld, %ld steps\n", o.batch, o.steps);
  std::fflush(stdout);

  const auto memory = allocate_memory(o);
  if (o.batch > o.max_fit) simulated_oom(o);
  if (o.hang_above >= 0 && o.batch > o.hang_above) {
    std::fprintf(stderr, "fake_train: waiting for a collective that never comes...\n");
    // Tests wait for this file to know the hang has begun.
    if (const char* marker = std::getenv("FAKE_TRAIN_HANG_MARKER")) std::fclose(std::fopen(marker, "w"));
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }

  std::mt19937 random(std::random_device{}());
  const double noise = 1.0 + o.noise_pct / 100.0 * std::uniform_real_distribution<double>(-1.0, 1.0)(random);
  const double fill = static_cast<double>(o.batch) / static_cast<double>(o.saturate_at);
  const double step_seconds = o.step_ms / 1000.0 * (fill > 1 ? fill : 1);
  for (long step = 1; step <= o.steps; ++step) {
    const double seconds = step_seconds + (step == 1 ? o.first_step_ms / 1000.0 : 0);
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    // The printed figures are the model's (times exact, throughput scaled and noisy).
    print_step(o, step, seconds, noise * o.throughput_scale * static_cast<double>(o.batch) / seconds);
  }
  if (o.log_style == "hf")
    std::printf("{'train_runtime': %.4f, 'train_samples_per_second': %.3f, 'train_steps_per_second': %.3f, "
                "'train_loss': 1.2345, 'epoch': 1.0}\n", step_seconds * static_cast<double>(o.steps),
                noise * o.throughput_scale * static_cast<double>(o.batch) / step_seconds, 1.0 / step_seconds);
  if (o.report_vm)
    if (FILE* status = std::fopen("/proc/self/status", "r")) {
      char line[256];
      while (std::fgets(line, sizeof line, status))
        if (std::strncmp(line, "VmPeak:", 7) == 0) std::printf("fake_train: %s", line);
      std::fclose(status);
    }
  return 0;
}
