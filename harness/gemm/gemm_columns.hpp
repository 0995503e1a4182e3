// What the GEMM benchmark's rows hold (harness/report/declaration.hpp):
// predict's model rows, and the measured peak, sweep and model rows, whose
// timing and clock columns the case runner adds (kernels/runner/case_runner_columns.hpp).
#pragma once

#include "harness/report/declaration.hpp"

namespace redline {

ColumnsDeclaration gemm_columns();

}  // namespace redline
