// What the checkpoint benchmark's rows hold (harness/report/declaration.hpp):
// one row per storage or GPU stage, and the advice rows.
#pragma once

#include "harness/report/declaration.hpp"

namespace redline {

ColumnsDeclaration checkpoint_columns();

}  // namespace redline
