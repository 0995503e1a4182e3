// What the attention benchmark's rows hold (harness/report/declaration.hpp):
// plan's predicted layouts and sweep's measured cases, whose timing and clock
// columns the case runner adds (kernels/runner/case_runner_columns.hpp).
#pragma once

#include "harness/report/declaration.hpp"

namespace redline {

ColumnsDeclaration attention_columns();

}  // namespace redline
