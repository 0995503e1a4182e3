// What a profile's rows hold (harness/report/declaration.hpp): per profiled
// step a row of its wall time and idle split, and a row per category.
#pragma once

#include "harness/report/declaration.hpp"

namespace redline {

ColumnsDeclaration profile_columns();
// What a profiled batch-sweep trial's row gains (--profile).
ColumnsDeclaration profiled_trial_columns();

}  // namespace redline
