// What the training-step benchmark's rows hold (harness/report/declaration.hpp):
// memory's predictions, run's measured step, and sweep's trials (which also
// carry the batch-sweep engine's trial columns, added where the tool is named).
#pragma once

#include "harness/report/declaration.hpp"

namespace redline {

ColumnsDeclaration training_step_columns();

}  // namespace redline
