// The host backend: NCCL's collective semantics (counts, in-place layouts,
// avg) mapped onto MPI calls on host memory.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "collectives/backends/host_backend.hpp"
#include "collectives/bootstrap/mpi_bootstrap.hpp"

namespace redline {

namespace {

double combine(ReduceOp op, double a, double b) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return a + b;
    case ReduceOp::prod: return a * b;
    case ReduceOp::max: return std::isnan(a) || std::isnan(b) ? nan : (a > b ? a : b);
    case ReduceOp::min: return std::isnan(a) || std::isnan(b) ? nan : (a < b ? a : b);
  }
  return nan;
}

// The definition: decode both, combine in double, round once.
void reduce_reference(const void* in, void* inout, std::size_t count, DataType type, ReduceOp op) {
  for (std::size_t i = 0; i < count; ++i)
    store_element(inout, type, i, combine(op, load_element(in, type, i), load_element(inout, type, i)));
}

// The definition is a call and a switch per element per conversion, some
// 25 times slower than MPI's float sum. The fast paths below give the same
// bits: tables built from the definition, and an encoder used only where
// it cannot differ from store_element (a finite result exact in float, in
// the type's normal range); everything else takes the definition.

template <DataType T>
const float* decode_table16() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (std::uint32_t bits = 0; bits < 65536; ++bits) {
      const auto raw = static_cast<std::uint16_t>(bits);
      t[bits] = static_cast<float>(load_element(&raw, T, 0));
    }
    return t;
  }();
  return table.data();
}

std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// float -> bfloat16, round to nearest even; false where the definition must
// decide (NaN). Infinity, and a value that overflows to it, take the fast
// path: in-place repetitions feed each sum back in, so a long series reaches
// inf, and a slow path there made in-place rows time the encoder.
bool encode_bfloat16(float f, std::uint16_t& out) {
  const std::uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return false;  // NaN
  if ((u & 0x7fffffffu) == 0x7f800000u) {
    out = static_cast<std::uint16_t>(u >> 16);
    return true;
  }
  out = static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);  // an overflow carries into inf
  return true;
}

// float -> IEEE half, round to nearest even: zero, normal results, and inf
// (what >= 65520 rounds to, as for bfloat16 above); subnormals and NaN are the
// definition's.
bool encode_half(float f, std::uint16_t& out) {
  const std::uint32_t u = float_bits(f);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t x = u & 0x7fffffffu;
  if (x == 0) {
    out = sign;
    return true;
  }
  if (x > 0x7f800000u || x < 0x38800000u) return false;  // NaN, or below 2^-14 (subnormal)
  if (x >= 0x477ff000u) {  // rounds to >= 65520: infinity
    out = static_cast<std::uint16_t>(sign | 0x7c00u);
    return true;
  }
  const std::uint32_t mantissa = x & 0x7fffffu;
  std::uint32_t h = ((((x >> 23) - 127 + 15) << 10) | (mantissa >> 13));
  const std::uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry moves into the exponent, as it should
  out = static_cast<std::uint16_t>(sign | h);
  return true;
}

template <DataType T>
void reduce16(const void* in, void* inout, std::size_t count, ReduceOp op) {
  const float* decode = decode_table16<T>();
  const auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  for (std::size_t i = 0; i < count; ++i) {
    const double r = combine(op, decode[a[i]], decode[b[i]]);
    const auto f = static_cast<float>(r);
    std::uint16_t bits;
    const bool fast = static_cast<double>(f) == r &&
                      (T == DataType::bfloat16 ? encode_bfloat16(f, bits) : encode_half(f, bits));
    if (fast)
      b[i] = bits;
    else
      store_element(inout, T, i, r);
  }
}

// fp8: every (in, inout) pair's result, from the definition (64 KiB per type and op).
template <DataType T, ReduceOp O>
const std::uint8_t* fp8_table() {
  static const std::vector<std::uint8_t> table = [] {
    std::vector<std::uint8_t> t(65536);
    std::vector<std::uint8_t> a(65536), b(65536);
    for (std::uint32_t i = 0; i < 65536; ++i) {
      a[i] = static_cast<std::uint8_t>(i >> 8);
      b[i] = static_cast<std::uint8_t>(i & 0xffu);
    }
    reduce_reference(a.data(), b.data(), 65536, T, O);
    for (std::uint32_t i = 0; i < 65536; ++i) t[i] = b[i];
    return t;
  }();
  return table.data();
}

template <DataType T>
const std::uint8_t* fp8_table(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return fp8_table<T, ReduceOp::sum>();
    case ReduceOp::prod: return fp8_table<T, ReduceOp::prod>();
    case ReduceOp::max: return fp8_table<T, ReduceOp::max>();
    case ReduceOp::min: return fp8_table<T, ReduceOp::min>();
  }
  return nullptr;
}

void reduce8(const std::uint8_t* table, const void* in, void* inout, std::size_t count) {
  const auto* a = static_cast<const std::uint8_t*>(in);
  auto* b = static_cast<std::uint8_t*>(inout);
  for (std::size_t i = 0; i < count; ++i) b[i] = table[(static_cast<std::uint32_t>(a[i]) << 8) | b[i]];
}

}  // namespace

void host_reduce_elements(const void* in, void* inout, std::size_t count, DataType type, ReduceOp op) {
  switch (type) {
    case DataType::bfloat16: return reduce16<DataType::bfloat16>(in, inout, count, op);
    case DataType::float16: return reduce16<DataType::float16>(in, inout, count, op);
    case DataType::fp8_e4m3: return reduce8(fp8_table<DataType::fp8_e4m3>(op), in, inout, count);
    case DataType::fp8_e5m2: return reduce8(fp8_table<DataType::fp8_e5m2>(op), in, inout, count);
    default: return reduce_reference(in, inout, count, type, op);
  }
}

namespace {

constexpr int kNumTypes = 8;
constexpr int kNumOps = 5;

// Types MPI has no arithmetic for: they travel as raw integers and reduce
// through our own operations.
bool needs_custom_op(DataType type) {
  return type == DataType::float16 || type == DataType::bfloat16 || type == DataType::fp8_e4m3 ||
         type == DataType::fp8_e5m2;
}

MPI_Datatype mpi_type(DataType type) {
  switch (type) {
    case DataType::int8: return MPI_INT8_T;
    case DataType::int32: return MPI_INT32_T;
    case DataType::float32: return MPI_FLOAT;
    case DataType::float64: return MPI_DOUBLE;
    case DataType::float16:
    case DataType::bfloat16: return MPI_UINT16_T;
    case DataType::fp8_e4m3:
    case DataType::fp8_e5m2: return MPI_UINT8_T;
  }
  throw std::logic_error("unknown DataType");
}

template <DataType T, ReduceOp O>
void custom_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  host_reduce_elements(in, inout, static_cast<std::size_t>(*len), T, O);
}

template <DataType T>
void create_ops(MPI_Op (&ops)[kNumOps]) {
  // Every op is commutative, which lets MPI pick its fastest algorithm.
  check_mpi(MPI_Op_create(&custom_reduce<T, ReduceOp::sum>, 1, &ops[static_cast<int>(ReduceOp::sum)]), "MPI_Op_create");
  check_mpi(MPI_Op_create(&custom_reduce<T, ReduceOp::prod>, 1, &ops[static_cast<int>(ReduceOp::prod)]),
            "MPI_Op_create");
  check_mpi(MPI_Op_create(&custom_reduce<T, ReduceOp::max>, 1, &ops[static_cast<int>(ReduceOp::max)]), "MPI_Op_create");
  check_mpi(MPI_Op_create(&custom_reduce<T, ReduceOp::min>, 1, &ops[static_cast<int>(ReduceOp::min)]), "MPI_Op_create");
}

// The user-defined operations, created once and shared by a backend and the
// backends split from it; freed with the last of them.
class CustomOps {
 public:
  CustomOps() {
    for (auto& row : ops_)
      for (auto& op : row) op = MPI_OP_NULL;
    create_ops<DataType::float16>(ops_[static_cast<int>(DataType::float16)]);
    create_ops<DataType::bfloat16>(ops_[static_cast<int>(DataType::bfloat16)]);
    create_ops<DataType::fp8_e4m3>(ops_[static_cast<int>(DataType::fp8_e4m3)]);
    create_ops<DataType::fp8_e5m2>(ops_[static_cast<int>(DataType::fp8_e5m2)]);
  }
  ~CustomOps() {
    if (!mpi_alive()) return;
    for (auto& row : ops_)
      for (auto& op : row)
        if (op != MPI_OP_NULL) MPI_Op_free(&op);
  }
  CustomOps(const CustomOps&) = delete;
  CustomOps& operator=(const CustomOps&) = delete;

  // avg reduces as a sum; the caller scales.
  MPI_Op get(DataType type, ReduceOp op) const {
    return ops_[static_cast<int>(type)][static_cast<int>(op == ReduceOp::avg ? ReduceOp::sum : op)];
  }

 private:
  MPI_Op ops_[kNumTypes][kNumOps];
};

// A derived datatype freed on scope exit.
class TypeHandle {
 public:
  TypeHandle() = default;
  ~TypeHandle() {
    if (type_ != MPI_DATATYPE_NULL && mpi_alive()) MPI_Type_free(&type_);
  }
  TypeHandle(const TypeHandle&) = delete;
  TypeHandle& operator=(const TypeHandle&) = delete;
  MPI_Datatype* out() { return &type_; }
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

// One datatype element covering exactly `bytes` bytes, whatever the size:
// `block`-byte pieces (block <= INT_MAX) plus the remainder. Used where a
// count beyond MPI's int would change the layout if split into calls
// (all_gather, all_to_all): one element per rank keeps NCCL's layout.
void make_bytes_type(std::size_t bytes, std::size_t block, TypeHandle& result) {
  if (bytes <= block) {
    check_mpi(MPI_Type_contiguous(static_cast<int>(bytes), MPI_BYTE, result.out()), "MPI_Type_contiguous");
  } else {
    const std::size_t blocks = bytes / block, rest = bytes % block;
    if (blocks > static_cast<std::size_t>(INT_MAX))
      throw std::runtime_error("message of " + std::to_string(bytes) + " bytes is too large for the host backend");
    TypeHandle piece, body;
    check_mpi(MPI_Type_contiguous(static_cast<int>(block), MPI_BYTE, piece.out()), "MPI_Type_contiguous");
    check_mpi(MPI_Type_contiguous(static_cast<int>(blocks), piece.get(), rest ? body.out() : result.out()),
              "MPI_Type_contiguous");
    if (rest) {
      TypeHandle tail;
      check_mpi(MPI_Type_contiguous(static_cast<int>(rest), MPI_BYTE, tail.out()), "MPI_Type_contiguous");
      int lengths[2] = {1, 1};
      MPI_Aint displacements[2] = {0, static_cast<MPI_Aint>(blocks * block)};
      MPI_Datatype types[2] = {body.get(), tail.get()};
      check_mpi(MPI_Type_create_struct(2, lengths, displacements, types, result.out()), "MPI_Type_create_struct");
    }
  }
  check_mpi(MPI_Type_commit(result.out()), "MPI_Type_commit");
}

char* at(void* p, std::size_t bytes) { return p ? static_cast<char*>(p) + bytes : nullptr; }
const char* at(const void* p, std::size_t bytes) { return p ? static_cast<const char*>(p) + bytes : nullptr; }

class HostBackend final : public Backend {
 public:
  // Takes ownership of `comm`.
  HostBackend(MPI_Comm comm, std::shared_ptr<const CustomOps> ops, const HostBackendOptions& options)
      : comm_(comm), ops_(std::move(ops)) {
    max_count_ = options.max_count_per_call == 0
                     ? static_cast<std::size_t>(INT_MAX)
                     : std::min(options.max_count_per_call, static_cast<std::size_t>(INT_MAX));
    options_.max_count_per_call = max_count_;
    check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
  ~HostBackend() override {
    if (comm_ != MPI_COMM_NULL && mpi_alive()) MPI_Comm_free(&comm_);
  }
  HostBackend(const HostBackend&) = delete;
  HostBackend& operator=(const HostBackend&) = delete;

  std::string name() const override { return "host"; }
  int size() const override { return size_; }
  int local_ranks() const override { return 1; }
  int rank(int local) const override {
    check_local(local);
    return rank_;
  }
  // Integer avg follows NCCL: the sum divided by n, truncated toward zero.
  std::string unsupported_reason(DataType, ReduceOp) const override { return ""; }

  void* allocate(int local, std::size_t bytes) override {
    check_local(local);
    void* p = nullptr;
    const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64;
    if (posix_memalign(&p, 64, rounded) != 0) throw std::bad_alloc();
    return p;
  }
  void release(int local, void* ptr) override {
    check_local(local);
    std::free(ptr);
  }
  bool host_addressable() const override { return true; }
  void copy_in(int local, void* dst, const void* host_src, std::size_t bytes) override {
    check_local(local);
    if (bytes && dst != host_src) std::memcpy(dst, host_src, bytes);
  }
  void copy_out(int local, void* host_dst, const void* src, std::size_t bytes) override {
    check_local(local);
    if (bytes && host_dst != src) std::memcpy(host_dst, src, bytes);
  }

  void all_reduce(int local, const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) override {
    check_local(local);
    const MPI_Op mop = reduction(type, op);
    const std::size_t es = info(type).bytes;
    const bool in_place = send == recv;
    chunks(count, [&](std::size_t first, int n) {
      check_mpi(MPI_Allreduce(in_place ? MPI_IN_PLACE : at(send, first * es), at(recv, first * es), n, mpi_type(type),
                              mop, comm_),
                "MPI_Allreduce");
    });
    if (op == ReduceOp::avg) scale_down(recv, count, type);
  }

  void all_gather(int local, const void* send, void* recv, std::size_t send_count, DataType type) override {
    check_local(local);
    const std::size_t es = info(type).bytes;
    // NCCL's in-place layout: our block of the output is the input.
    const bool in_place = send == at(recv, static_cast<std::size_t>(rank_) * send_count * es);
    const void* source = in_place ? MPI_IN_PLACE : send;
    if (send_count <= max_count_) {
      const int n = static_cast<int>(send_count);
      check_mpi(MPI_Allgather(source, n, mpi_type(type), recv, n, mpi_type(type), comm_), "MPI_Allgather");
    } else {
      TypeHandle block;
      make_bytes_type(send_count * es, max_count_, block);
      check_mpi(MPI_Allgather(source, 1, block.get(), recv, 1, block.get(), comm_), "MPI_Allgather");
    }
  }

  void reduce_scatter(int local, const void* send, void* recv, std::size_t recv_count, DataType type,
                      ReduceOp op) override {
    check_local(local);
    const MPI_Op mop = reduction(type, op);
    const std::size_t es = info(type).bytes;
    const std::size_t block_bytes = recv_count * es;
    // NCCL's in-place layout: the output is our block of the input.
    const bool in_place = recv == at(send, static_cast<std::size_t>(rank_) * block_bytes);
    if (recv_count <= max_count_) {
      const int n = static_cast<int>(recv_count);
      if (in_place) {
        // MPI's in-place form leaves our block at the start of the buffer,
        // where NCCL wants it at our rank's offset: one extra copy (not on
        // rank 0), and the input blocks in front of ours are overwritten.
        void* buffer = const_cast<void*>(send);  // aliases recv, so writable
        check_mpi(MPI_Reduce_scatter_block(MPI_IN_PLACE, buffer, n, mpi_type(type), mop, comm_),
                  "MPI_Reduce_scatter_block");
        if (rank_ != 0 && block_bytes) std::memmove(recv, buffer, block_bytes);
      } else {
        check_mpi(MPI_Reduce_scatter_block(send, recv, n, mpi_type(type), mop, comm_), "MPI_Reduce_scatter_block");
      }
    } else {
      // Blocks beyond MPI's int count: a reduce to each rank in turn, in
      // pieces (a derived datatype cannot carry MPI's built-in operations).
      chunks(recv_count, [&](std::size_t first, int n) {
        for (int root = 0; root < size_; ++root) {
          const std::size_t offset = (static_cast<std::size_t>(root) * recv_count + first) * es;
          const bool mine = root == rank_;
          const void* source = mine && in_place ? MPI_IN_PLACE : at(send, offset);
          check_mpi(MPI_Reduce(source, mine ? at(recv, first * es) : nullptr, n, mpi_type(type), mop, root, comm_),
                    "MPI_Reduce (reduce_scatter piece)");
        }
      });
    }
    if (op == ReduceOp::avg) scale_down(recv, recv_count, type);
  }

  void broadcast(int local, const void* send, void* recv, std::size_t count, DataType type, int root) override {
    check_local(local);
    check_root(root);
    const std::size_t es = info(type).bytes;
    // MPI broadcasts in one buffer: out-of-place, the root first copies its
    // input to its output (a local memcpy, inside the timed call).
    if (rank_ == root && send != recv && count) std::memmove(recv, send, count * es);
    chunks(count, [&](std::size_t first, int n) {
      check_mpi(MPI_Bcast(at(recv, first * es), n, mpi_type(type), root, comm_), "MPI_Bcast");
    });
  }

  void reduce(int local, const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
              int root) override {
    check_local(local);
    check_root(root);
    const MPI_Op mop = reduction(type, op);
    const std::size_t es = info(type).bytes;
    const bool in_place = rank_ == root && send == recv;  // MPI_IN_PLACE is only legal at the root
    chunks(count, [&](std::size_t first, int n) {
      check_mpi(MPI_Reduce(in_place ? MPI_IN_PLACE : at(send, first * es), at(recv, first * es), n, mpi_type(type), mop,
                           root, comm_),
                "MPI_Reduce");
    });
    if (op == ReduceOp::avg && rank_ == root) scale_down(recv, count, type);
  }

  void all_to_all(int local, const void* send, void* recv, std::size_t count_per_peer, DataType type) override {
    check_local(local);
    const std::size_t es = info(type).bytes;
    const void* source = send == recv ? MPI_IN_PLACE : send;
    if (count_per_peer <= max_count_) {
      const int n = static_cast<int>(count_per_peer);
      check_mpi(MPI_Alltoall(source, n, mpi_type(type), recv, n, mpi_type(type), comm_), "MPI_Alltoall");
    } else {
      TypeHandle block;
      make_bytes_type(count_per_peer * es, max_count_, block);
      check_mpi(MPI_Alltoall(source, 1, block.get(), recv, 1, block.get(), comm_), "MPI_Alltoall");
    }
  }

  void send_recv(int local, const void* send, void* recv, std::size_t count, DataType type, int peer_to,
                 int peer_from) override {
    check_local(local);
    check_peer(peer_to);
    check_peer(peer_from);
    const std::size_t es = info(type).bytes;
    constexpr int kTag = 0;  // this communicator carries nothing else
    chunks(count, [&](std::size_t first, int n) {
      if (send == recv) {
        check_mpi(MPI_Sendrecv_replace(at(recv, first * es), n, mpi_type(type), peer_to, kTag, peer_from, kTag, comm_,
                                       MPI_STATUS_IGNORE),
                  "MPI_Sendrecv_replace");
      } else {
        check_mpi(MPI_Sendrecv(at(send, first * es), n, mpi_type(type), peer_to, kTag, at(recv, first * es), n,
                               mpi_type(type), peer_from, kTag, comm_, MPI_STATUS_IGNORE),
                  "MPI_Sendrecv");
      }
    });
  }

  std::unique_ptr<Backend> split(int color, int key) override {
    MPI_Comm part = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &part), "MPI_Comm_split");
    if (part == MPI_COMM_NULL) return nullptr;
    try {
      return std::make_unique<HostBackend>(part, ops_, options_);
    } catch (...) {
      MPI_Comm_free(&part);
      throw;
    }
  }

  void wait() override {}  // every call above has completed when it returns

  void abort() override { MPI_Abort(comm_, 1); }

 private:
  void check_local(int local) const {
    if (local != 0)
      throw std::out_of_range("the host backend drives one rank per process; local rank " + std::to_string(local) +
                              " does not exist");
  }
  void check_root(int root) const {
    if (root < 0 || root >= size_)
      throw std::out_of_range("root " + std::to_string(root) + " is out of range for " + std::to_string(size_) +
                              " ranks");
  }
  void check_peer(int peer) const {
    if (peer < 0 || peer >= size_)
      throw std::out_of_range("peer " + std::to_string(peer) + " is out of range for " + std::to_string(size_) +
                              " ranks");
  }

  MPI_Op reduction(DataType type, ReduceOp op) const {
    if (!supports(type, op))
      throw std::invalid_argument("the host backend cannot " + std::string(to_string(op)) + " " +
                                  std::string(info(type).name));
    if (needs_custom_op(type)) return ops_->get(type, op);
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg: return MPI_SUM;
      case ReduceOp::prod: return MPI_PROD;
      case ReduceOp::max: return MPI_MAX;
      case ReduceOp::min: return MPI_MIN;
    }
    throw std::logic_error("unknown ReduceOp");
  }

  // Elementwise operations split into calls of at most max_count_ elements;
  // one call (perhaps of 0 elements) otherwise, so every rank still joins.
  template <typename Call>
  void chunks(std::size_t count, Call call) const {
    std::size_t first = 0;
    do {
      const std::size_t n = std::min(count - first, max_count_);
      call(first, static_cast<int>(n));
      first += n;
    } while (first < count);
  }

  // avg = sum / n, rounded once to the type (truncated toward zero for integers).
  void scale_down(void* data, std::size_t count, DataType type) const {
    if (!data) return;
    const double n = size_;
    switch (type) {
      case DataType::float32: {
        auto* p = static_cast<float*>(data);
        for (std::size_t i = 0; i < count; ++i) p[i] = static_cast<float>(static_cast<double>(p[i]) / n);
        return;
      }
      case DataType::float64: {
        auto* p = static_cast<double*>(data);
        for (std::size_t i = 0; i < count; ++i) p[i] /= n;
        return;
      }
      default: {
        const bool integer = !info(type).is_floating;
        for (std::size_t i = 0; i < count; ++i) {
          const double mean = load_element(data, type, i) / n;
          store_element(data, type, i, integer ? std::trunc(mean) : mean);
        }
      }
    }
  }

  MPI_Comm comm_;
  std::shared_ptr<const CustomOps> ops_;
  HostBackendOptions options_;
  std::size_t max_count_ = INT_MAX;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

std::unique_ptr<Backend> make_host_backend(Bootstrap& bootstrap, const HostBackendOptions& options) {
  auto* mpi = dynamic_cast<MpiBootstrap*>(&bootstrap);
  if (!mpi)
    throw std::runtime_error("the host backend runs on MPI and needs the MPI bootstrap (mpirun or srun); this run "
                             "uses the '" +
                             bootstrap.kind() + "' bootstrap");
  MPI_Comm comm = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(mpi->comm(), &comm), "MPI_Comm_dup");
  try {
    return std::make_unique<HostBackend>(comm, std::make_shared<const CustomOps>(), options);
  } catch (...) {
    MPI_Comm_free(&comm);
    throw;
  }
}

}  // namespace redline
