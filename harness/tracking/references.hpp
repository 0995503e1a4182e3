// Reference results per GPU model (results/references/<folder>/): the
// project's own GPU runs, kept so a user can ask "is my number normal?" and a
// model can be held to a measurement. A folder is a run folder (the tools'
// CSVs; rows entered by hand from docs/validation.md have a run id starting
// "transcribed") plus reference.txt ("key: value" lines: gpu, dates, source,
// driver, power_cap, software). A run finds the folder of its own GPU model and says,
// for each headline figure both hold, how far it stands from the reference.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/report/report.hpp"
#include "harness/report/run_results.hpp"
#include "harness/report/schema.hpp"

namespace redline {

struct Reference {
  std::filesystem::path folder;
  std::string gpu;        // the driver's name for it: "NVIDIA H200"
  std::string gpu_model;  // the peaks table's model: "H200 SXM"
  std::string dates, source, driver, power_cap, software;
  RunResults results;
};

// Where the references live: REDLINE_REFERENCES when set, else
// results/references beside the build folder the binary runs from, else the
// source tree it was built from.
std::filesystem::path references_root();

// Reads one folder; throws std::runtime_error (file:line) for a reference.txt
// without a gpu line, and what load_results throws for its CSVs.
Reference load_reference(const std::filesystem::path& folder);

// The folder under `root` whose GPU is the same model as `gpu_name` (by the
// peaks table; a GPU the table does not know matches by its exact name).
// nullopt when none does or the root is absent.
std::optional<Reference> find_reference(const std::filesystem::path& root, const std::string& gpu_name);

// One line per headline figure and case the run and the reference both
// hold: "MAMF dtype=bf16;layout=tn 712.3 TFLOPS: 2.2% below the reference
// H200 (728.6, 2026-11-22, driver 580.159.04, 700 W cap, transcribed)".
std::vector<std::string> reference_lines(const RunResults& run, const Reference& reference, const Schema& schema);

// Adds a "reference" summary line per figure to `report` when this GPU's
// reference folder holds the same cases, or one line saying which folder was
// looked in when it holds none of them. Never throws: a reference that cannot
// be read is reported as such in the line, and the run's own results stand.
void add_reference_summary(Report& report);

}  // namespace redline
