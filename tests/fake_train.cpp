// A stand-in training program with known behaviour, for batch_sweep's
// integration tests. Like a real training step, its throughput grows with the
// batch until the GPU is full and then stays flat, and above a memory limit
// it dies the way PyTorch does. Here the "GPU" is a model:
//   step time = step_ms x max(1, batch / saturate_at)
// so throughput doubles with the batch up to saturate_at and is flat above it.
// It really sleeps that long per step, so wall-time throughput works too, and
// it prints the model's throughput like a trainer's log line.
//
//   fake_train [--batch-size N] [--saturate-at 32] [--max-fit 100]
//              [--step-ms 20] [--steps 1] [--hang-above N] [--oom-style pytorch|jax|custom]
//              [--throughput-scale X] [--noise-pct P]
// Out of memory wins over a hang: a batch above --max-fit always OOMs.
// Without --batch-size it reads REDLINE_BATCH_SIZE. --throughput-scale
// multiplies the printed throughput (0 gives a broken reading of 0);
// --noise-pct spreads it uniformly by +-P% (seeded per process), like a noisy node.
// FAKE_TRAIN_HANG_MARKER names a file created when a hang begins.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  long batch = -1, saturate_at = 32, max_fit = 100, steps = 1, hang_above = -1;
  double step_ms = 20, throughput_scale = 1, noise_pct = 0;
  std::string oom_style = "pytorch";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--batch-size") batch = std::atol(value);
    else if (flag == "--saturate-at") saturate_at = std::atol(value);
    else if (flag == "--max-fit") max_fit = std::atol(value);
    else if (flag == "--step-ms") step_ms = std::atof(value);
    else if (flag == "--steps") steps = std::atol(value);
    else if (flag == "--hang-above") hang_above = std::atol(value);
    else if (flag == "--oom-style") oom_style = value;
    else if (flag == "--throughput-scale") throughput_scale = std::atof(value);
    else if (flag == "--noise-pct") noise_pct = std::atof(value);
    else {
      std::fprintf(stderr, "fake_train: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (batch < 0 && std::getenv("REDLINE_BATCH_SIZE")) batch = std::atol(std::getenv("REDLINE_BATCH_SIZE"));
  if (batch < 1) {
    std::fprintf(stderr, "fake_train: no batch size (--batch-size or REDLINE_BATCH_SIZE)\n");
    return 2;
  }
  std::printf("fake_train: batch size %ld, %ld steps\n", batch, steps);
  std::fflush(stdout);

  if (batch > max_fit) {
    const double gib = 0.02 * static_cast<double>(batch);
    if (oom_style == "jax") {
      std::fprintf(stderr,
                   "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
                   "allocate %.2fGiB.\n", gib);
    } else if (oom_style == "custom") {
      std::fprintf(stderr, "myframework: arena exhausted (wanted %.2f GiB)\n", gib);
    } else {
      std::fprintf(stderr,
                   "Traceback (most recent call last):\n"
                   "  File \"train.py\", line 42, in <module>\n"
                   "    loss = model(batch).loss\n"
                   "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %.2f GiB. GPU 0 has a total "
                   "capacity of 79.10 GiB of which 1.23 GiB is free. Of the allocated memory 75.20 GiB is "
                   "allocated by PyTorch.\n", gib);
    }
    return 1;
  }

  if (hang_above >= 0 && batch > hang_above) {
    std::fprintf(stderr, "fake_train: waiting for a collective that never comes...\n");
    // Tests wait for this file to know the hang has begun.
    if (const char* marker = std::getenv("FAKE_TRAIN_HANG_MARKER")) std::fclose(std::fopen(marker, "w"));
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }

  std::mt19937 random(std::random_device{}());
  const double noise = 1.0 + noise_pct / 100.0 * std::uniform_real_distribution<double>(-1.0, 1.0)(random);
  const double fill = static_cast<double>(batch) / static_cast<double>(saturate_at);
  const double step_seconds = step_ms / 1000.0 * (fill > 1 ? fill : 1);
  for (long s = 1; s <= steps; ++s) {
    std::this_thread::sleep_for(std::chrono::duration<double>(step_seconds));
    std::printf("step %ld/%ld: loss %.3f, throughput: %.2f samples/s\n", s, steps, 2.5 / (1.0 + 0.1 * s),
                noise * throughput_scale * static_cast<double>(batch) / step_seconds);
    std::fflush(stdout);
  }
  return 0;
}
