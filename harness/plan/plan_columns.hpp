// What the training plan's rows hold (harness/report/declaration.hpp): the
// plan, then one row per scenario with one knob moved. Formulas and sources:
// docs/plan.md.
#pragma once

#include "harness/report/declaration.hpp"

namespace redline {

ColumnsDeclaration plan_columns();

}  // namespace redline
