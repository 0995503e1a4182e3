// What a batch sweep's rows hold (harness/report/declaration.hpp): one row
// per trial, a batch size run as a child process.
#pragma once

#include "harness/report/declaration.hpp"

namespace redline {

// The columns every batch sweep's trial rows carry, whichever program it sweeps.
ColumnsDeclaration batch_trial_columns();
// A sweep of any training command: the trial columns, its chart and headlines.
ColumnsDeclaration batch_sweep_columns();

}  // namespace redline
