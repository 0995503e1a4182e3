// The columns the GPU case runner adds to every case's row
// (harness/report/declaration.hpp): the timing, the datasheet share, and the
// NVML clocks and throttle flags around the timed samples. Pure C++: the
// declarations are built into the schema on every machine, GPU or not.
#pragma once

#include "harness/report/declaration.hpp"

namespace redline {

ColumnsDeclaration case_runner_columns();

}  // namespace redline
