// What a collective sweep's rows hold (harness/report/declaration.hpp): one
// row per collective, size and side (out of place, in place), and with
// `--per-rank-csv` one per rank.
#pragma once

#include "harness/report/declaration.hpp"

namespace redline {

ColumnsDeclaration collective_columns();

}  // namespace redline
