// Checking a collective's result on the host. Every rank fills its send buffer
// with the shared data pattern and compares its receive buffer with the
// collective's expected values: exactly for every integer type and for sum,
// prod, max, min and data movement (the pattern keeps those exact in any
// reduction order), and within a stated tolerance for floating-point avg.
// NaN never passes. Pure C++: works on host copies of any backend's buffers.
#pragma once

#include <cstddef>
#include <string>

#include "collectives/ops/collective.hpp"
#include "collectives/ops/data_type.hpp"

namespace redline {

// Writes `rank`'s input, input_value(i, rank, c) for i < send_count, as `type`
// (which must be c.type). In place, pass the send block inside the buffer.
void fill_input(void* send_host, std::size_t send_count, DataType type, int rank, const CollectiveCase& c);

// Fills `count` elements with a value no check ever expects: NaN for floating
// types, the type's minimum for integers (inputs and exact results stay within
// +-exact_integer_limit). Fill receive buffers with it before the operation, so
// an element the collective never wrote is counted as wrong.
void fill_poison(void* host, std::size_t count, DataType type);

// How many of the first recv_count elements of `recv_host` (this rank's
// receive buffer, copied to the host) differ from collective.expected(i, rank,
// counts, c). Elements whose result is undefined (reduce off the root) are
// skipped. `type` must be c.type.
std::size_t count_wrong(const void* recv_host, std::size_t recv_count, DataType type, const Collective& collective,
                        const CollectiveCounts& counts, const CollectiveCase& c, int rank);

// The largest |got - expected| accepted for one element reduced with `op`
// (pass ReduceOp::sum for collectives that only move data): 0 except for avg
// of floating types. NCCL computes avg as sum(x_r * round(1/n)) with roundings
// in the type; with the pattern's two same-signed contributors that stays
// within 3 units in the last place: 3 x tolerance x max(|expected|, smallest
// normal of the type).
double allowed_error(double expected, DataType type, ReduceOp op);

// One line for the output and the README, e.g. "bfloat16: exact for sum, prod,
// max, min and data movement; avg within 3 x 2^-7 relative; NaN never passes".
std::string tolerance_statement(DataType type);

}  // namespace redline
