// What a collective sweep concludes from its rows alone (sweep_summary), and
// how its record saves them (sweep_record): rows built by the sweep's own row
// builders, no ranks, no files.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "collectives/ops/collective.hpp"
#include "collectives/sweep/sweep_record.hpp"
#include "collectives/sweep/sweep_rows.hpp"
#include "collectives/sweep/sweep_summary.hpp"
#include "harness/report/csv_writer.hpp"
#include "tests/support.hpp"

namespace redline {
namespace {

const Collective& named(const char* name) { return *find_collective(name); }

GroupResult group(double busbw, int color = 0, std::uint64_t wrong = 0) {
  GroupResult g;
  g.color = color;
  g.seconds = 1e-3;
  g.busbw = busbw;
  g.algbw = busbw;
  g.checked = true;
  g.wrong = wrong;
  return g;
}

// One measured size of all_reduce float sum: the out-of-place and the
// in-place row of each group, as the sweep records them.
void add_size(std::vector<Row>& rows, std::size_t bytes, const std::vector<std::pair<GroupResult, GroupResult>>& groups,
              const std::vector<std::string>& group_hosts = {}) {
  const CollectiveCase c{DataType::float32, ReduceOp::sum, 0, 4, 1};
  for (const auto& [oop, inp] : groups)
    for (const GroupResult* g : {&oop, &inp}) {
      const std::string* hosts = group_hosts.empty() ? nullptr : &group_hosts[static_cast<std::size_t>(g->color)];
      rows.push_back(measured_row(point_row(named("all_reduce"), bytes, bytes / 4, c, g == &inp), *g, false, hosts));
    }
}

std::string all_lines(const SweepSummary& s) {
  std::string text;
  for (const auto& line : s.lines) text += line + "\n";
  return text;
}

std::string entry(const SweepSummary& s, const std::string& key) {
  for (const auto& [k, v] : s.entries)
    if (k == key) return v;
  return "(none)";
}

TEST(SweepSummary, PeakSaturationAndAcceptanceFromTheBetterLayout) {
  std::vector<Row> rows;
  const double oop[] = {1, 5, 9.5, 10}, inp[] = {0.5, 6, 10.5, 9.8};
  for (int i = 0; i < 4; ++i) add_size(rows, 1024u << i, {{group(oop[i]), group(inp[i])}});
  SummaryOptions options;
  options.expect_busbw_GBps = 12;
  const SweepSummary s = summarize_sweep(rows, {}, options);
  // 4K reads 10.5 in place: the better layout counts. Saturation: no larger
  // size (8K: 10) gains more than 5% over 4K, which is at 90% of the peak.
  EXPECT_CONTAINS(all_lines(s),
                  "# all_reduce float sum: peak busbw 10.5 GB/s at 4K; saturation size 4K "
                  "(10.5 GB/s; no larger size gains more than 5%)\n");
  EXPECT_EQ(entry(s, "saturation_size all_reduce float sum"), "4K (10.5 GB/s; no larger size gains more than 5%)");
  EXPECT_EQ(entry(s, "peak_busbw all_reduce float sum"), "10.5 GB/s at 4K");
  EXPECT_CONTAINS(all_lines(s), "# FAILED: all_reduce float sum peak busbw 10.5 GB/s is below --expect-busbw 12\n");
  EXPECT_TRUE(s.below_expectation);
  EXPECT_CONTAINS(all_lines(s), "# Out of bounds values : 0 OK\n");
  EXPECT_FALSE(s.nothing_measured);

  options.expect_busbw_GBps = 10;
  const SweepSummary pass = summarize_sweep(rows, {}, options);
  EXPECT_FALSE(pass.below_expectation);
  EXPECT_EQ(entry(pass, "acceptance all_reduce float sum"), "PASSED");
}

// The saturation size is the harness's saturation point: 2K reaches 90% of
// the peak (9.2 of 10) but 8K still gains 4.2% over 4K and 8.7% over 2K, so
// the plateau, and the saturation size, is 4K (it was 2K, the 90% point).
TEST(SweepSummary, SaturationSizeIsThePlateauNotJustNinetyPercent) {
  std::vector<Row> rows;
  const double busbw[] = {1, 9.2, 9.6, 10};
  for (int i = 0; i < 4; ++i) add_size(rows, 1024u << i, {{group(busbw[i]), group(0.1)}});
  EXPECT_EQ(entry(summarize_sweep(rows, {}, {}), "saturation_size all_reduce float sum"),
            "4K (9.60 GB/s; no larger size gains more than 5%)");
}

// Still rising at the largest size: no saturation size, and where 90% of the peak was.
TEST(SweepSummary, StillRisingHasNoSaturationSize) {
  std::vector<Row> rows;
  const double busbw[] = {1, 2, 4, 8};
  for (int i = 0; i < 4; ++i) add_size(rows, 1024u << i, {{group(busbw[i]), group(0.1)}});
  const SweepSummary s = summarize_sweep(rows, {}, {});
  EXPECT_CONTAINS(all_lines(s),
                  "# all_reduce float sum: peak busbw 8.00 GB/s at 8K; saturation size not reached (a larger size "
                  "still gains more than 5% at the end of the sweep; 90% of peak at 8K, 8.00 GB/s)\n");
}

// Three significant figures, whatever the magnitude: a slow group's busbw
// reads as measured, never "0.00 GB/s".
TEST(SweepSummary, SmallBusbwKeepsThreeSignificantFigures) {
  std::vector<Row> rows;
  const double busbw[] = {0.0101, 0.0412};
  for (int i = 0; i < 2; ++i) add_size(rows, 1024u << i, {{group(busbw[i]), group(0.001)}});
  EXPECT_EQ(entry(summarize_sweep(rows, {}, {}), "peak_busbw all_reduce float sum"), "0.0412 GB/s at 2K");
}

// One rank: an in-place operation moves nothing, so its figure never sets the peak.
TEST(SweepSummary, OneRankCountsOutOfPlaceOnly) {
  std::vector<Row> rows;
  add_size(rows, 1024, {{group(2), group(500)}});
  SummaryOptions options;
  options.single_rank = true;
  EXPECT_EQ(entry(summarize_sweep(rows, {}, options), "peak_busbw all_reduce float sum"), "2.00 GB/s at 1K");
  options.single_rank = false;
  EXPECT_EQ(entry(summarize_sweep(rows, {}, options), "peak_busbw all_reduce float sum"), "500 GB/s at 1K");
}

// Skipped and error rows are no evidence of bandwidth: a run of nothing else
// fails, and an expectation never passes on it. Stopped by Ctrl-C, measuring
// nothing is no failure of its own.
TEST(SweepSummary, NothingMeasuredFails) {
  const CollectiveCase c{DataType::float32, ReduceOp::sum, 0, 2, 1};
  const Row point = point_row(named("all_reduce"), 4, 1, c, false);
  const std::vector<Row> rows = {skipped_row(point, "under one element per rank"), error_row(point, "rank 1 (a) died")};
  SummaryOptions options;
  options.expect_busbw_GBps = 1;
  const SweepSummary s = summarize_sweep(rows, {}, options);
  EXPECT_TRUE(s.nothing_measured);
  EXPECT_TRUE(s.below_expectation);
  EXPECT_CONTAINS(all_lines(s),
                  "# Out of bounds values : N/A (nothing measured)\n"
                  "# Avg bus bandwidth    : N/A (nothing measured)\n");
  EXPECT_CONTAINS(all_lines(s), "# FAILED: nothing was measured (every size skipped; the reasons are above)\n");
  EXPECT_CONTAINS(all_lines(s), "# FAILED: --expect-busbw 1: no size was measured (all skipped)\n");
  options.interrupted = true;
  EXPECT_FALSE(summarize_sweep(rows, {}, options).nothing_measured);
}

TEST(SweepSummary, WrongValuesAreCountedOrNotChecked) {
  std::vector<Row> rows;
  add_size(rows, 1024, {{group(1, 0, 3), group(1, 0, 2)}});
  const SweepSummary s = summarize_sweep(rows, {}, {});
  EXPECT_EQ(s.wrong, 5u);
  EXPECT_CONTAINS(all_lines(s), "# Out of bounds values : 5 ERROR\n# Avg bus bandwidth    : 1.0000\n#\n");
  EXPECT_EQ(rows[0].status, RowStatus::wrong);
  SummaryOptions unchecked;
  unchecked.checked = false;
  EXPECT_CONTAINS(all_lines(summarize_sweep(rows, {}, unchecked)), "# Out of bounds values : N/A (-c 0: not checked)");
}

// --split: each group its own curve and verdict, and the groups more than
// --outlier below the median group at each size named.
TEST(SweepSummary, SplitNamesTheSlowGroup) {
  std::vector<Row> rows;
  const std::vector<std::string> hosts = {"a+b", "c+d", "e+f"};
  for (int i = 0; i < 2; ++i)
    add_size(rows, 1024u << i,
             {{group(10, 0), group(10, 0)}, {group(10.2, 1), group(10.1, 1)}, {group(5, 2), group(5, 2)}}, hosts);
  SummaryOptions options;
  options.split = true;
  options.expect_busbw_GBps = 8;
  const SweepSummary s = summarize_sweep(rows, {}, options);
  EXPECT_CONTAINS(all_lines(s), "# all_reduce float sum group 2 (e+f): peak busbw 5.00 GB/s at 1K");
  EXPECT_CONTAINS(all_lines(s), "# FAILED: all_reduce float sum group 2 (e+f) peak busbw 5.00 GB/s is below");
  EXPECT_TRUE(s.below_expectation);
  EXPECT_EQ(entry(s, "slow_groups all_reduce float sum"), "group 2 (e+f) at 2 of 2 sizes");
}

// --per-rank: the ranks named stragglers, with how many sizes each.
TEST(SweepSummary, StragglersFromThePerRankRows) {
  std::vector<Row> rows;
  add_size(rows, 1024, {{group(1), group(1)}});
  const CollectiveCase c{DataType::float32, ReduceOp::sum, 0, 2, 1};
  GatheredPoint arrival;
  arrival.late_s = {0, 30e-6};
  arrival.inside_s = {40e-6, 10e-6};
  arrival.straggler = 1;
  std::vector<Row> per_rank;
  for (const std::size_t bytes : {1024u, 2048u})
    for (int r = 0; r < 2; ++r)
      per_rank.push_back(
          arrival_row(point_row(named("all_reduce"), bytes, bytes / 4, c, false), arrival, r, r ? "b" : "a"));
  SummaryOptions options;
  options.per_rank = true;
  EXPECT_EQ(entry(summarize_sweep(rows, per_rank, options), "stragglers"), "rank 1 (b) at 2 sizes");
  // The --per-rank-csv header names each column once (the rank's host was a
  // second "host" column, which a reader takes as the last one).
  Report per_rank_report;
  per_rank_report.rows = per_rank;
  const std::string csv = to_csv(per_rank_report);
  std::vector<std::string> header;
  std::istringstream fields(csv.substr(0, csv.find('\r')));
  for (std::string name; std::getline(fields, name, ',');) header.push_back(name);
  EXPECT_EQ(std::set<std::string>(header.begin(), header.end()).size(), header.size()) << csv.substr(0, csv.find('\r'));
  per_rank.clear();
  EXPECT_EQ(entry(summarize_sweep(rows, per_rank, options), "stragglers"), "none");
}

// ---------------------------------------------------------------- the record

Report empty_report() {
  Report report;
  report.tool = "a_tool";
  return report;
}

TEST(SweepRecord, SavesOnceWhateverComesSecond) {
  SweepRecord record(empty_report());
  EXPECT_FALSE(record.save()) << "nowhere to save yet";
  int saves = 0;
  record.set_save([&](const Report&, const Report&) { ++saves; });
  EXPECT_TRUE(record.save());
  EXPECT_FALSE(record.save());
  EXPECT_FALSE(record.save_after_failure("rank 1 died"));
  EXPECT_EQ(saves, 1);
}

// A failure saves the rows so far and an error row with the parameters of
// the point in progress, the failure in its note, and the run's result.
TEST(SweepRecord, AFailureSavesTheRowsAndAnErrorRowForThePointInProgress) {
  SweepRecord record(empty_report());
  Report saved, saved_per_rank;
  record.set_save([&](const Report& report, const Report& per_rank) {
    saved = report;
    saved_per_rank = per_rank;
  });
  const CollectiveCase c{DataType::float32, ReduceOp::sum, 0, 2, 1};
  const Collective& all_reduce = named("all_reduce");
  record.add(measured_row(point_row(all_reduce, 1024, 256, c, false), group(1), false, nullptr));
  record.add_per_rank(Row{});
  record.begin_point(point_row(all_reduce, 4096, 1024, c, true));
  EXPECT_EQ(record.completed_rows(), 1u);
  EXPECT_TRUE(record.save_after_failure("rank 2 (h) died during all_reduce float sum 4K in-place"));
  ASSERT_EQ(saved.rows.size(), 2u);
  const Row& error = saved.rows.back();
  EXPECT_EQ(error.status, RowStatus::error);
  EXPECT_EQ(error.param_value("bytes"), "4096");
  EXPECT_EQ(error.param_value("inplace"), "1");
  EXPECT_TRUE(std::isnan(*error.metric_value("busbw_GBps")));
  EXPECT_EQ(error.note, "rank 2 (h) died during all_reduce float sum 4K in-place");
  EXPECT_EQ(saved.summary.back().second, "FAILED: rank 2 (h) died during all_reduce float sum 4K in-place");
  EXPECT_EQ(saved_per_rank.rows.size(), 1u);
  EXPECT_EQ(saved_per_rank.tool, "a_tool");
}

// Between points (or before the first), the error row has no parameters.
TEST(SweepRecord, AFailureBetweenPointsNamesNoPoint) {
  SweepRecord record(empty_report());
  Report saved;
  record.set_save([&](const Report& report, const Report&) { saved = report; });
  const CollectiveCase c{DataType::float32, ReduceOp::sum, 0, 2, 1};
  record.begin_point(point_row(named("all_reduce"), 4096, 1024, c, false));
  record.end_point();
  EXPECT_TRUE(record.save_after_failure("communicator init did not finish"));
  ASSERT_EQ(saved.rows.size(), 1u);
  EXPECT_TRUE(saved.rows[0].params.empty());
  EXPECT_EQ(saved.rows[0].status, RowStatus::error);
}

// A size's rows are added once both of its halves are measured; a failure in
// the in-place half still saves the out-of-place result it gathered before
// (held), ahead of the error row, and counts it in what it announces. A
// finished size's held rows are gone: neither a later failure nor the final
// save repeats them.
TEST(SweepRecord, AFailureInTheInPlaceHalfSavesTheOutOfPlaceResult) {
  SweepRecord record(empty_report());
  Report saved;
  record.set_save([&](const Report& report, const Report&) { saved = report; });
  const CollectiveCase c{DataType::float32, ReduceOp::sum, 0, 4, 1};
  const Collective& all_reduce = named("all_reduce");
  std::vector<Row> rows;
  add_size(rows, 1024, {{group(2), group(2)}});
  for (const Row& row : rows) record.add(row);
  // 1K's own out-of-place result, held until its in-place half was in, then dropped.
  record.hold({measured_row(point_row(all_reduce, 1024, 256, c, false), group(2), false, nullptr)});
  record.hold({});
  // 4K, split in two groups: both groups' out-of-place rows are held.
  record.hold({measured_row(point_row(all_reduce, 4096, 1024, c, false), group(3, 0), false, nullptr),
               measured_row(point_row(all_reduce, 4096, 1024, c, false), group(4, 1), false, nullptr)});
  record.begin_point(point_row(all_reduce, 4096, 1024, c, true));
  std::size_t announced = 0;
  EXPECT_TRUE(record.save_after_failure("rank 1 (h) died", [&](std::size_t n) { announced = n; }));
  EXPECT_EQ(announced, 4u) << "1K's two rows and 4K's two held ones";
  ASSERT_EQ(saved.rows.size(), 5u);
  for (std::size_t r = 2; r < 4; ++r) {
    EXPECT_EQ(saved.rows[r].status, RowStatus::ok);
    EXPECT_EQ(saved.rows[r].param_value("bytes"), "4096");
    EXPECT_EQ(saved.rows[r].param_value("inplace"), "0");
  }
  EXPECT_EQ(*saved.rows[2].metric_value("busbw_GBps"), 3);
  EXPECT_EQ(*saved.rows[3].metric_value("busbw_GBps"), 4);
  EXPECT_EQ(saved.rows[4].status, RowStatus::error);
  EXPECT_EQ(saved.rows[4].param_value("inplace"), "1");
}

// Held rows belong to a failure's save alone: a run that ends (or is
// interrupted) within a size saves only the sizes measured whole.
TEST(SweepRecord, HeldRowsAreNotSavedByTheFinalSave) {
  SweepRecord record(empty_report());
  Report saved;
  record.set_save([&](const Report& report, const Report&) { saved = report; });
  const CollectiveCase c{DataType::float32, ReduceOp::sum, 0, 2, 1};
  record.hold({measured_row(point_row(named("all_reduce"), 1024, 256, c, false), group(1), false, nullptr)});
  EXPECT_TRUE(record.save());
  EXPECT_TRUE(saved.rows.empty());
}

}  // namespace
}  // namespace redline
