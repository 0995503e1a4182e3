// The peer for allreduce_bench --backend host: a plain MPI_Allreduce loop
// with nothing around it, so scripts/compare-allreduce can show in one run,
// as a ratio, that redline's harness adds nothing to what it measures.
//
//   mpi_allreduce_loop MIN_BYTES MAX_BYTES FACTOR ITERS WARMUP
// prints, on rank 0, one line per size: bytes time_us busbw_GBps (float sum,
// out-of-place, time averaged over ranks as allreduce_bench's -a 1).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 6) {
    if (rank == 0) std::fprintf(stderr, "usage: mpi_allreduce_loop MIN_BYTES MAX_BYTES FACTOR ITERS WARMUP\n");
    MPI_Finalize();
    return 2;
  }
  const long min_bytes = std::atol(argv[1]), max_bytes = std::atol(argv[2]);
  const double factor = std::atof(argv[3]);
  const int iters = std::atoi(argv[4]), warmup = std::atoi(argv[5]);
  if (min_bytes < 4 || max_bytes < min_bytes || factor <= 1 || iters < 1 || warmup < 0) {
    if (rank == 0)
      std::fprintf(stderr, "mpi_allreduce_loop: need 4 <= MIN_BYTES <= MAX_BYTES, FACTOR > 1, ITERS >= 1, WARMUP >= 0\n");
    MPI_Finalize();
    return 2;
  }
  // 64-byte aligned, as allreduce_bench's host buffers are. A std::vector's
  // large block starts 16 bytes past a page, and that alone cost the MPI
  // reduction up to a third of its bandwidth at 8 MiB on this project's VM:
  // the comparison would have timed the alignment, not the harness.
  const std::size_t elements = static_cast<std::size_t>(max_bytes / 4) + 1;
  auto aligned_floats = [elements](float value) {
    void* p = nullptr;
    if (posix_memalign(&p, 64, elements * sizeof(float)) != 0) std::abort();
    float* f = static_cast<float*>(p);
    for (std::size_t i = 0; i < elements; ++i) f[i] = value;
    return std::unique_ptr<float, decltype(&std::free)>(f, &std::free);
  };
  const auto send = aligned_floats(1.0f + static_cast<float>(rank)), recv = aligned_floats(0.0f);
  // The warm-up pass allreduce_bench and nccl-tests make before timing:
  // WARMUP operations at every size, doubling, so both tools time as warm a
  // machine and the comparison sees only the timed loop.
  for (long bytes = min_bytes; bytes <= max_bytes; bytes *= 2)
    for (int i = 0; i < warmup; ++i)
      MPI_Allreduce(send.get(), recv.get(), static_cast<int>(bytes / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  for (double bytes = static_cast<double>(min_bytes); bytes <= static_cast<double>(max_bytes); bytes *= factor) {
    const int count = static_cast<int>(static_cast<long>(bytes) / 4);
    for (int i = 0; i < warmup; ++i)
      MPI_Allreduce(send.get(), recv.get(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i)
      MPI_Allreduce(send.get(), recv.get(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double seconds = (MPI_Wtime() - start) / iters, sum = 0;
    MPI_Reduce(&seconds, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      const double avg = sum / size;
      const double busbw = static_cast<double>(count) * 4 / avg / 1e9 * 2.0 * (size - 1) / size;
      std::printf("%ld %.3f %.4f\n", static_cast<long>(count) * 4, avg * 1e6, busbw);
    }
  }
  MPI_Finalize();
  return 0;
}
