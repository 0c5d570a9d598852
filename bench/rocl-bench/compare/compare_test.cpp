// compare_test.cpp - the parts of rocl-bench compare that decide what is
// shown without running anything: the command line, the output parsers,
// the statistics over rounds, the best anchor and the sustainability ratios;
// and how a program is run and stopped (with real, tiny programs: sh).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <sstream>

#include "against.hpp"
#include "bench_kernels.hpp"
#include "child_process.hpp"
#include "compare_options.hpp"
#include "goals.hpp"
#include "limits.hpp"
#include "mpi_suite.hpp"
#include "ncs_suite.hpp"
#include "output_parse.hpp"
#include "oversub.hpp"
#include "progress.hpp"
#include "results.hpp"
#include "stage.hpp"
#include "stats.hpp"
#include "threads.hpp"

namespace rocl_bench::compare {
namespace {

// The goals of the source tree's goals.txt, the file rocl-bench reads.
const std::vector<Goal> &file_goals() {
  static const std::vector<Goal> goals = [] {
    std::vector<Goal> g;
    const std::string why = load_goals(ROCL_BENCH_SOURCE_GOALS, g);
    EXPECT_EQ(why, "");
    return g;
  }();
  return goals;
}

CompareOptions parsed(std::vector<std::string> args) {
  CompareOptions o;
  const std::string error = parse_compare_options(args, o);
  EXPECT_EQ(error, "");
  return o;
}

std::string error_of(std::vector<std::string> args) {
  CompareOptions o;
  return parse_compare_options(args, o);
}

TEST(CompareOptions, DefaultsRunEveryStageAtEverySize) {
  const CompareOptions o = parsed({});
  EXPECT_EQ(o.stages, (std::vector<std::string>{"p2p", "threads", "ports", "sustain", "oversub"}));
  EXPECT_EQ(o.oversub_iters, 1000);
  ASSERT_EQ(o.sizes.size(), 13u);  // 1 B .. 16 MiB, powers of 4
  EXPECT_EQ(o.sizes.front(), 1u);
  EXPECT_EQ(o.sizes.back(), std::size_t{16} << 20);
  EXPECT_EQ(o.pairs, (std::vector<int>{1, 2, 4, 8, 16}));
  EXPECT_EQ(o.ports, (std::vector<int>{1, 4, 16, 64}));
  EXPECT_EQ(o.rounds, 5);
  EXPECT_FALSE(o.quick);
}

TEST(CompareOptions, QuickShrinksWhatWasNotGiven) {
  const CompareOptions o = parsed({"--quick", "--sizes", "1K", "p2p", "sustain"});
  EXPECT_TRUE(o.quick);
  EXPECT_EQ(o.sizes, (std::vector<std::size_t>{1024}));  // given: kept
  EXPECT_EQ(o.pairs, (std::vector<int>{1, 2}));
  EXPECT_EQ(o.rounds, 1);
  EXPECT_EQ(o.reps, 1);
  EXPECT_DOUBLE_EQ(o.seconds, 0.02);
  EXPECT_EQ(o.stages, (std::vector<std::string>{"p2p", "sustain"}));
}

TEST(CompareOptions, ValuesWithEqualsAndSuffixes) {
  const CompareOptions o =
      parsed({"--sizes=8,64K,1M", "--rounds=5", "--time", "0.5", "--systems", "rocl,ompi-tcp"});
  EXPECT_EQ(o.sizes, (std::vector<std::size_t>{8, 64 << 10, 1 << 20}));
  EXPECT_EQ(o.rounds, 5);
  EXPECT_DOUBLE_EQ(o.seconds, 0.5);
  EXPECT_EQ(o.systems, (std::vector<std::string>{"rocl", "ompi-tcp"}));
}

TEST(CompareOptions, BadValuesAreRefusedWithTheOptionNamed) {
  EXPECT_NE(error_of({"--sizes", "8,x"}).find("--sizes"), std::string::npos);
  EXPECT_NE(error_of({"--sizes", "0"}).find("--sizes"), std::string::npos);
  EXPECT_NE(error_of({"--rounds", "0"}).find("--rounds"), std::string::npos);
  EXPECT_NE(error_of({"--time", "-1"}).find("--time"), std::string::npos);
  EXPECT_NE(error_of({"--time"}).find("--time"), std::string::npos);
  EXPECT_NE(error_of({"--pairs", "1,1000"}).find("--pairs"), std::string::npos);
  EXPECT_NE(error_of({"bogus"}).find("bogus"), std::string::npos);
  EXPECT_NE(error_of({"--rank", "other"}).find("--rank"), std::string::npos);
}

TEST(CompareOptions, SystemFiltersSelectNamesAndTheirFamilies) {
  const CompareOptions o = parsed({"--systems", "rocl-shm,ompi"});
  EXPECT_TRUE(selected(o, "rocl-shm"));
  EXPECT_TRUE(selected(o, "rocl-shm-poll"));
  EXPECT_FALSE(selected(o, "rocl-shmx"));
  EXPECT_FALSE(selected(o, "rocl-tcp"));
  EXPECT_TRUE(selected(o, "ompi-vader"));
  EXPECT_FALSE(selected(o, "mpich"));
  EXPECT_TRUE(selected(parsed({}), "anything"));
}

NcsOptions ncs_parsed(const std::vector<std::string> &args) {
  NcsOptions o;
  EXPECT_EQ(parse_ncs_options(args, o), "");
  return o;
}

std::string ncs_error_of(const std::vector<std::string> &args) {
  NcsOptions o;
  return parse_ncs_options(args, o);
}

TEST(NcsOptions, QuickShortensWhatWasNotGiven) {
  const NcsOptions d = ncs_parsed({});
  EXPECT_EQ(d.reps, 5);
  EXPECT_DOUBLE_EQ(d.seconds, 0.2);
  EXPECT_EQ(d.transport, "shm");
  EXPECT_FALSE(d.tables);
  const NcsOptions q = ncs_parsed({"--quick", "--time=0.5"});
  EXPECT_EQ(q.reps, 1);
  EXPECT_DOUBLE_EQ(q.seconds, 0.5);  // given: kept
}

TEST(NcsOptions, TablesTakeTheRestOfTheLine) {
  const NcsOptions o = ncs_parsed({"--reps", "3", "--tables", "--hosts", "1 2", "--quick"});
  EXPECT_EQ(o.reps, 3);
  EXPECT_FALSE(o.quick);  // tables.sh's, not ours
  EXPECT_TRUE(o.tables);
  EXPECT_EQ(o.tables_args, (std::vector<std::string>{"--hosts", "1 2", "--quick"}));
}

TEST(NcsOptions, BadValuesAreRefusedWithTheOptionNamed) {
  EXPECT_NE(ncs_error_of({"--reps", "0"}).find("--reps"), std::string::npos);
  EXPECT_NE(ncs_error_of({"--time", "x"}).find("--time"), std::string::npos);
  EXPECT_NE(ncs_error_of({"--time"}).find("--time"), std::string::npos);
  EXPECT_NE(ncs_error_of({"--transport", "ucx"}).find("--transport"), std::string::npos);
  EXPECT_NE(ncs_error_of({"--out="}).find("--out"), std::string::npos);
  EXPECT_NE(ncs_error_of({"bogus"}).find("bogus"), std::string::npos);
}

TEST(OutputParse, RowsBetweenCommentsHeadersAndRankPrefixes) {
  const auto rows = parse_rows(
      "# library: Open MPI\n"
      "benchmark,size_bytes,pairs,median,min,max,unit\n"
      "latency,8,1,0.38,0.37,0.40,us\n"
      "[0] ports,8,4,3.5,3.4,3.6,M msg/s\r\n"
      "[1] some other line, with, commas\n"
      "bandwidth,65536,1,x,1,2,GB/s\n"
      "cpus: 2 usable\n");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].benchmark, "latency");
  EXPECT_EQ(rows[0].size, 8u);
  EXPECT_DOUBLE_EQ(rows[0].median, 0.38);
  EXPECT_EQ(rows[1].benchmark, "ports");
  EXPECT_EQ(rows[1].pairs, 4);
  EXPECT_EQ(rows[1].unit, "M msg/s");
}

TEST(OutputParse, UcxPerftestBatchLines) {
  const auto lines = parse_ucx_perftest(
      "b.txt,iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,"
      "overall_mr\n"
      "L8r0,2000,0.624,0.665,0.665,11.47,11.47,1503200,1503200\n"
      "B65536r0, 200,6.624,6.835,6.835,9143.49,9143.49,146296,146296\n");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].label, "L8r0");
  EXPECT_EQ(lines[0].iterations, 2000);
  EXPECT_DOUBLE_EQ(lines[0].latency_us, 0.665);
  EXPECT_EQ(lines[1].label, "B65536r0");
  EXPECT_DOUBLE_EQ(lines[1].bandwidth_mib, 9143.49);
  EXPECT_DOUBLE_EQ(lines[1].rate, 146296);
}

TEST(OutputParse, PointToPointUnitsBecomeGigabytesAndMessageRates) {
  const std::vector<CsvRow> rows = {
      {"shm-latency", 8, 1, 0.2, 0.1, 0.3, "us"},
      {"shm-bandwidth", 1000, 1, 5000, 4000, 6000, "MB/s"},  // 5 GB/s, 5 M msg/s
      {"shm-bandwidth", 1000, 1, 5e6, 4e6, 6e6, "msg/s"},    // left out: derived above
      {"bandwidth", 2000, 1, 4, 3, 5, "GB/s"},               // 2 M msg/s
      {"shm-latency-other", 8, 1, 1, 1, 1, "us"},
  };
  const auto s = p2p_samples(rows, "rocl-shm", 2);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0].metric, "latency");
  EXPECT_EQ(s[0].round, 2);
  EXPECT_EQ(s[1].metric, "bandwidth");
  EXPECT_DOUBLE_EQ(s[1].median, 5);
  EXPECT_EQ(s[2].metric, "rate");
  EXPECT_DOUBLE_EQ(s[2].median, 5);
  EXPECT_DOUBLE_EQ(s[2].max, 6);
  EXPECT_DOUBLE_EQ(s[3].median, 4);
  EXPECT_DOUBLE_EQ(s[4].median, 2);
}

TEST(OutputParse, ThreadRatesOfRoclAndMpiBench) {
  const std::vector<CsvRow> rows = {{"shm-rate", 8, 4, 3, 2, 4, "M msg/s"},
                                    {"mt_rate", 8, 8, 1, 1, 1, "Mmsg/s"},
                                    {"mt_latency", 8, 8, 1, 1, 1, "us"}};
  const auto s = thread_samples(rows, "x", 1);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].pairs, 4);
  EXPECT_EQ(s[1].pairs, 8);
  EXPECT_EQ(s[1].unit, "M msg/s");
}

TEST(OutputParse, FailureLineNamesWhatWentWrong) {
  EXPECT_EQ(failure_line("starting\nmpi_pingpong (rank 1): MPI_Send failed: x\nlater\n"),
            "mpi_pingpong (rank 1): MPI_Send failed: x");
  EXPECT_EQ(failure_line("one\nlast line\n\n"), "last line");
  std::string long_line(500, 'e');
  long_line += " error";
  EXPECT_EQ(failure_line(long_line).size(), 160u);
}

TEST(Stats, MedianGeometricMeanSanity) {
  EXPECT_DOUBLE_EQ(median_of({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median_of({4, 1, 2, 3}), 2.5);
  EXPECT_DOUBLE_EQ(median_of({}), 0);
  EXPECT_NEAR(*geometric_mean({0.25, 1}), 0.5, 1e-12);
  EXPECT_FALSE(geometric_mean({1, 0}).has_value());
  EXPECT_FALSE(geometric_mean({}).has_value());
  EXPECT_TRUE(is_sane(1e-9));
  EXPECT_FALSE(is_sane(0));
  EXPECT_FALSE(is_sane(-1));
  EXPECT_FALSE(is_sane(std::numeric_limits<double>::infinity()));
  EXPECT_FALSE(is_sane(std::nan("")));
  EXPECT_FALSE(is_sane(Sample{"latency", "x", 8, 1, 1, 2, 3, 1, "us"}));  // min > median
  EXPECT_TRUE(lower_is_better("latency"));
  EXPECT_TRUE(lower_is_better("rtt-alone"));
  EXPECT_FALSE(lower_is_better("bandwidth"));
}

TEST(Stats, SummaryIsTheMedianOfRoundsWithTheExtremesOfAll) {
  const std::vector<Sample> samples = {
      {"latency", "a", 8, 1, 1, 1.0, 0.9, 1.1, "us"},
      {"latency", "a", 8, 1, 2, 3.0, 2.0, 9.0, "us"},
      {"latency", "a", 8, 1, 3, 2.0, 1.5, 2.5, "us"},
      {"latency", "b", 8, 1, 1, 0.5, 0.4, 0.6, "us"},
  };
  const auto all = summarize_rounds(samples);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].system, "a");
  EXPECT_DOUBLE_EQ(all[0].median, 2.0);
  EXPECT_DOUBLE_EQ(all[0].min, 0.9);
  EXPECT_DOUBLE_EQ(all[0].max, 9.0);
  EXPECT_EQ(all[0].rounds, 3);
  EXPECT_DOUBLE_EQ(all[0].best_round, 1.0);  // the lowest of the rounds' medians
  EXPECT_EQ(best_of(all, "latency", {"a", "b", "missing"}, 8, 1)->system, "b");
  EXPECT_EQ(best_of(all, "latency", {"a"}, 8, 1)->system, "a");
  EXPECT_EQ(best_of(all, "latency", {"missing"}, 8, 1), nullptr);
  EXPECT_EQ(best_of(all, "latency", {"a", "b"}, 16, 1), nullptr);
}

TEST(Stats, BestRoundIsTheHighestMedianForBandwidth) {
  const std::vector<Sample> samples = {
      {"bandwidth", "a", 64, 1, 1, 5.0, 4.0, 6.0, "GB/s"},
      {"bandwidth", "a", 64, 1, 2, 9.0, 8.0, 9.5, "GB/s"},
      {"bandwidth", "a", 64, 1, 3, 2.0, 1.0, 3.0, "GB/s"},
  };
  const auto all = summarize_rounds(samples);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_DOUBLE_EQ(all[0].median, 5.0);
  EXPECT_DOUBLE_EQ(all[0].best_round, 9.0);
  EXPECT_DOUBLE_EQ(figure_of(all[0], Figure::kBestRound), 9.0);
  EXPECT_DOUBLE_EQ(figure_of(all[0], Figure::kMedian), 5.0);
}

TEST(Stats, BestOfHigherIsBetterForBandwidth) {
  const std::vector<Summary> all = {{"bandwidth", "a", 64, 1, 5, 5, 5, 1, "GB/s"},
                                    {"bandwidth", "b", 64, 1, 7, 7, 7, 1, "GB/s"}};
  EXPECT_EQ(best_of(all, "bandwidth", {"a", "b"}, 64, 1)->system, "b");
}

TEST(Sustainability, RatiosAndGeometricMeans) {
  StageRun run;
  run.stage = "sustain";
  run.configs = {Config{"rocl-shm-thread", "", "", "", nullptr, 4},
                 Config{"ompi-vader", "", "", "", nullptr, 4},
                 Config{"broken", "", "", "", nullptr, 4}};
  auto add = [&](const char *system, const char *metric, double v) {
    run.summary.push_back({metric, system, 8, 1, v, v, v, 1, ""});
  };
  add("rocl-shm-thread", "compute-alone", 4);
  add("rocl-shm-thread", "compute-with-pingpong", 3.6);  // 0.9
  add("rocl-shm-thread", "rtt-alone", 10);
  add("rocl-shm-thread", "rtt-with-compute", 40);  // 0.25
  add("ompi-vader", "compute-alone", 4);
  add("ompi-vader", "compute-with-pingpong", 2);  // 0.5
  add("ompi-vader", "rtt-alone", 1);
  add("ompi-vader", "rtt-with-compute", 1000);  // 0.001
  add("broken", "compute-alone", 4);            // incomplete: left out
  const auto s = sustainability(run);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_NEAR(s[0].compute_ratio, 0.9, 1e-12);
  EXPECT_NEAR(s[0].rtt_ratio, 0.25, 1e-12);
  EXPECT_NEAR(s[0].geomean, std::sqrt(0.9 * 0.25), 1e-12);
  EXPECT_NEAR(s[0].rtt_best_ratio, 1.0 / 40, 1e-12);  // the best alone: ompi's 1 us
  EXPECT_NEAR(s[1].geomean, std::sqrt(0.5 * 0.001), 1e-12);
  EXPECT_NEAR(s[1].geomean_best, s[1].geomean, 1e-12);
}

TEST(Results, CellsSayWhyThereIsNoFigure) {
  StageRun run;
  run.configs = {Config{"here", "shm", "", "", nullptr, 0},
                 Config{"absent", "shm", "", "not installed", nullptr, 0},
                 Config{"broken", "shm", "", "", nullptr, 0}};
  run.result.failed["broken"] = "exit status 1";
  run.summary.push_back({"latency", "here", 8, 1, 0.153, 0.15, 0.16, 1, "us"});
  EXPECT_EQ(run.cell("latency", "here", 8), "0.153");
  EXPECT_EQ(run.cell("latency", "here", 16), "-");
  EXPECT_EQ(run.cell("latency", "absent", 8), "n/a");
  EXPECT_EQ(run.cell("latency", "broken", 8), "failed");
}

// A p2p run of one shm point where rocl's MPI is faster than every anchor
// and rocl-bench's buffer API slower than the best one.
StageRun shm_run_with_rocl_mpi() {
  StageRun run;
  run.stage = "p2p";
  for (const char *name : {"rocl-shm", "rocl-mpi-shm", "ompi-vader", "ucx-shm"}) {
    run.configs.push_back(Config{name, "shm", "", "", nullptr, 0});
  }
  auto add = [&](const char *system, double us) {
    run.summary.push_back({"latency", system, 8, 1, us, us, us, 1, "us"});
  };
  add("rocl-shm", 0.3);
  add("rocl-mpi-shm", 0.1);
  add("ompi-vader", 0.2);
  add("ucx-shm", 0.25);
  return run;
}

std::string printed(const std::function<void(std::FILE *)> &print) {
  char *text = nullptr;
  std::size_t size = 0;
  std::FILE *f = open_memstream(&text, &size);
  print(f);
  std::fclose(f);
  std::string s(text, size);
  std::free(text);
  return s;
}

std::string goals_printed(const Results &results, const std::vector<Goal> &goals) {
  return printed([&](std::FILE *f) { print_goals(f, results, goals, "goals.txt", false); });
}

std::string goals_printed(const Results &results) {
  return goals_printed(results, file_goals());
}

TEST(Results, RoclsOwnSystemsAreNeverAnchors) {
  const StageRun run = shm_run_with_rocl_mpi();
  EXPECT_TRUE(is_rocl("rocl-mpi-tcp"));
  EXPECT_FALSE(is_rocl("ompi-ucx"));
  EXPECT_EQ(anchors_in(run, "shm"), (std::vector<std::string>{"ompi-vader", "ucx-shm"}));
  EXPECT_EQ(rocl_systems_in(run, "shm", "rocl-shm"),
            (std::vector<std::string>{"rocl-shm", "rocl-mpi-shm"}));
}

TEST(Results, EachOfRoclsSystemsHasItsRatioAndItsGoal) {
  Results results;
  results.stages.push_back(shm_run_with_rocl_mpi());
  const std::string tables = printed([&](std::FILE *f) { print_tables(f, results, {}); });
  EXPECT_NE(tables.find("rocl/best  rocl-mpi/best  best anchor"), std::string::npos) << tables;
  // 8 B: rocl-shm 0.3 / ompi-vader 0.2 = 1.5, rocl-mpi-shm 0.1 / 0.2 = 0.5.
  std::istringstream lines(tables);
  std::string line;
  std::vector<std::string> row;
  while (std::getline(lines, line) && row.empty()) {
    std::istringstream words(line);
    std::vector<std::string> w{std::istream_iterator<std::string>(words), {}};
    if (!w.empty() && w[0] == "8") row = w;
  }
  EXPECT_EQ(row, (std::vector<std::string>{"8", "0.300", "0.100", "0.200", "0.250", "1.50", "0.500",
                                           "ompi-vader"}))
      << tables;
  const std::string goals = goals_printed(results);
  EXPECT_NE(goals.find("MISS  shm latency <= best"), std::string::npos) << goals;
  EXPECT_NE(goals.find("ok    rocl's MPI: shm latency <= best"), std::string::npos) << goals;
}

// A p2p run of one shm stream point: rocl-bench's stream (acks every
// window) behind ucx_perftest's (no acks) and ahead of Open MPI's (acks),
// rocl's stream without acks ahead of ucx_perftest's; and a latency.
StageRun shm_run_with_streams_of_both_kinds() {
  StageRun run;
  run.stage = "p2p";
  for (const char *name : {"rocl-shm", "rocl-shm-noack", "ompi-vader", "ucx-shm"}) {
    run.configs.push_back(Config{name, "shm", "", "", nullptr, 0});
  }
  run.configs[1].stream_acks = false;
  run.configs[1].stream_only = true;
  run.configs[3].stream_acks = false;
  auto add = [&](const char *metric, const char *system, double v) {
    run.summary.push_back({metric, system, 8, 1, v, v, v, 1, ""});
  };
  add("bandwidth", "rocl-shm", 0.12);
  add("bandwidth", "rocl-shm-noack", 0.15);
  add("bandwidth", "ompi-vader", 0.10);
  add("bandwidth", "ucx-shm", 0.14);
  add("latency", "rocl-shm", 0.15);
  add("latency", "ompi-vader", 0.2);
  add("latency", "ucx-shm", 0.1);
  return run;
}

// The words of the first line of `text` whose first word is `first` after
// the line starting with `title`.
std::vector<std::string> row_after(const std::string &text, const std::string &title,
                                   const std::string &first) {
  std::istringstream lines(text.substr(std::min(text.find(title), text.size())));
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::vector<std::string> w{std::istream_iterator<std::string>(words), {}};
    if (!w.empty() && w[0] == first) return w;
  }
  return {};
}

// rocl-bench --window 0 (rocl-shm-noack's stream): an ack per 16 MiB of
// blocks, at least every 64 messages, at most 256 MiB in flight.
TEST(StreamWindows, ZeroMeansNextToNoAcks) {
  EXPECT_EQ(window_for(1, 0), 65536);   // 256-byte blocks
  EXPECT_EQ(window_for(64, 0), 65536);  // the largest payload of a 256-byte block
  EXPECT_EQ(window_for(65, 0), 32768);
  EXPECT_EQ(window_for(4096, 0), 2048);  // 8 KiB blocks
  EXPECT_EQ(window_for(256 << 10, 0), 64);
  EXPECT_EQ(window_for(16 << 20, 0), 8);  // 32 MiB blocks: the in-flight bound
  EXPECT_EQ(window_for(1, 64), 64);
  EXPECT_EQ(window_for(16 << 20, 64), 8);
  EXPECT_EQ(describe_window(0, {1, 16 << 20}),
            "window 0: next to no acks, one every 16 MiB of blocks (65536 for 1, 8 for 16M)");
  EXPECT_EQ(describe_window(64, {1, 16 << 20}),
            "window 64 (8 for 16M, to keep <= 256 MiB of blocks in flight)");
}

TEST(Results, StreamsAreSetBesideStreamsOfTheirKindOnly) {
  const StageRun run = shm_run_with_streams_of_both_kinds();
  const std::vector<std::string> anchors = {"ompi-vader", "ucx-shm"};
  EXPECT_EQ(anchors_like(run, "bandwidth", "rocl-shm", anchors),
            (std::vector<std::string>{"ompi-vader"}));
  EXPECT_EQ(anchors_like(run, "rate", "rocl-shm-noack", anchors),
            (std::vector<std::string>{"ucx-shm"}));
  EXPECT_EQ(anchors_like(run, "latency", "rocl-shm", anchors), anchors);
  EXPECT_EQ(rocl_systems_for(run, "shm", "rocl-shm", "latency"),
            (std::vector<std::string>{"rocl-shm"}));
  EXPECT_EQ(rocl_systems_for(run, "shm", "rocl-shm", "bandwidth"),
            (std::vector<std::string>{"rocl-shm", "rocl-shm-noack"}));

  Results results;
  results.stages.push_back(run);
  const std::string tables = printed([&](std::FILE *f) { print_tables(f, results, {}); });
  // rocl-shm 0.12 / ompi-vader 0.10, rocl-shm-noack 0.15 / ucx-shm 0.14.
  EXPECT_EQ(row_after(tables, "one-way bandwidth", "8"),
            (std::vector<std::string>{"8", "0.120", "0.150", "0.100", "0.140", "1.20", "1.07",
                                      "ompi-vader,", "ucx-shm"}))
      << tables;
  // The latency table has no column for the stream-only system; ucx-shm's
  // latency is an anchor of rocl-shm's like any other.
  EXPECT_EQ(row_after(tables, "one-way latency", "8"),
            (std::vector<std::string>{"8", "0.150", "0.200", "0.100", "1.50", "ucx-shm"}))
      << tables;
  const std::string goals = goals_printed(results);
  EXPECT_NE(goals.find("ok    shm bandwidth >= best"), std::string::npos) << goals;
  EXPECT_NE(goals.find("ok    shm bandwidth without acks >= ucx_perftest's"), std::string::npos)
      << goals;

  // The CSV's ratio rows pair them the same way.
  const std::string csv = testing::TempDir() + "stream_kinds.csv";
  ASSERT_TRUE(write_results_csv(csv, results));
  std::ifstream in(csv);
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  EXPECT_NE(text.find("p2p,bandwidth,rocl-shm/ompi-vader,shm,8,1,all,1.2,"), std::string::npos)
      << text;
  EXPECT_NE(text.find("p2p,bandwidth,rocl-shm-noack/ucx-shm,shm,8,1,all,1.07"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("p2p,bandwidth,rocl-shm/ucx-shm"), std::string::npos) << text;
  EXPECT_NE(text.find("p2p,latency,rocl-shm/ucx-shm"), std::string::npos) << text;
  std::remove(csv.c_str());

  // Set beside ucx-shm's stream, rocl-bench's acked one would miss.
  results.stages[0].summary[1].median = 0.13;  // rocl-shm-noack now behind ucx-shm
  const std::string missed = goals_printed(results);
  EXPECT_NE(missed.find("MISS  shm bandwidth without acks >= ucx_perftest's (no acks) at every "
                        "size (0 of 1 point(s); worst: 8 rocl 0.130 vs ucx-shm 0.140)"),
            std::string::npos)
      << missed;
}

// Five rounds of one shm point: rocl-shm's median is behind ompi-vader's
// (slow phases hit three of its rounds), its best round ahead of the best
// round of every anchor; ucx-shm's best round is the anchors' best.
TEST(Results, GoalsAreJudgedOnMediansAndOnEachSystemsBestRound) {
  StageRun run;
  run.stage = "p2p";
  for (const char *name : {"rocl-shm", "ompi-vader", "ucx-shm"}) {
    run.configs.push_back(Config{name, "shm", "", "", nullptr, 0});
  }
  auto add = [&](const char *system, std::vector<double> rounds_us) {
    for (std::size_t r = 0; r < rounds_us.size(); ++r) {
      const double us = rounds_us[r];
      run.result.samples.push_back({"latency", system, 8, 1, int(r) + 1, us, us, us, "us"});
    }
  };
  add("rocl-shm", {0.15, 0.6, 0.6, 0.6, 0.16});   // median 0.6, best 0.15
  add("ompi-vader", {0.2, 0.2, 0.25, 0.2, 0.2});  // median 0.2, best 0.2
  add("ucx-shm", {0.9, 0.9, 0.18, 0.9, 0.9});     // median 0.9, best 0.18
  run.summary = summarize_rounds(run.result.samples);
  Results results;
  results.stages.push_back(run);
  const std::string goals = goals_printed(results);
  const auto medians = goals.find("on the medians of the rounds (the tables' figures):");
  const auto best = goals.find("on each system's best round (its fastest of the 5):");
  ASSERT_NE(medians, std::string::npos) << goals;
  ASSERT_NE(best, std::string::npos) << goals;
  ASSERT_LT(medians, best) << goals;
  const std::string on_medians = goals.substr(medians, best - medians);
  const std::string on_best = goals.substr(best);
  EXPECT_NE(on_medians.find("MISS  shm latency <= best shared-memory anchor at every size (0 of 1 "
                            "point(s); worst: 8 rocl 0.600 vs ompi-vader 0.200)"),
            std::string::npos)
      << goals;
  EXPECT_NE(on_best.find("ok    shm latency <= best shared-memory anchor at every size (1 of 1 "
                         "point(s); worst: 8 rocl 0.150 vs ucx-shm 0.180)"),
            std::string::npos)
      << goals;
  // No stage after p2p: no header for goals that are not there.
  EXPECT_EQ(goals.find("on the medians of the rounds:\n"), std::string::npos) << goals;
}

TEST(Results, OneRoundIsJudgedOnce) {
  Results results;
  results.stages.push_back(shm_run_with_rocl_mpi());  // summaries of one round
  const std::string goals = goals_printed(results);
  EXPECT_EQ(goals.find("best round"), std::string::npos) << goals;
}

std::string temp_path(const char *name) {
  const char *tmp = std::getenv("TMPDIR");
  return std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/rocl-compare-test-" +
         std::to_string(::getpid()) + "-" + name;
}

// Gone, or a zombie nobody reaped yet: not running.
bool running(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_text, comm, state;
  stat >> pid_text >> comm >> state;
  return state != "Z";
}

// Two systems, two rounds: rocl-shm's second run had the cpus moved apart
// after it (0.16 us against a median of 0.035).
StageRun p2p_run_with_probes() {
  StageRun run;
  run.stage = "p2p";
  for (const char *name : {"rocl-shm", "ompi-vader", "absent"}) {
    run.configs.push_back(Config{name, "shm", "", "", nullptr, 0});
  }
  run.result.cpu_probes = {{"rocl-shm", 1, 0.034, 0.035},
                           {"ompi-vader", 1, 0.035, 0.036},
                           {"rocl-shm", 2, 0.035, 0.16},
                           {"ompi-vader", 2, 0.015, 0.034}};
  return run;
}

TEST(CpuProbes, ProbesOverTwiceTheStagesMedianAreMarked) {
  const StageRun run = p2p_run_with_probes();
  const double median = probes_median(run.result.cpu_probes);
  EXPECT_DOUBLE_EQ(median, 0.035);
  EXPECT_FALSE(slow_probe(0.07, median));
  EXPECT_TRUE(slow_probe(0.0701, median));
  EXPECT_FALSE(slow_probe(1.0, 0));  // no median: nothing is judged
  EXPECT_EQ(probe_cell(run.result.cpu_probes[2], median), "0.035/0.160*");
  EXPECT_EQ(probe_cell(run.result.cpu_probes[3], median), "0.015/0.034");
}

TEST(CpuProbes, PrintedPerSystemAndRoundAndWrittenToTheCsv) {
  Results results;
  results.stages.push_back(p2p_run_with_probes());
  const std::string text = printed([&](std::FILE *f) { print_cpu_probes(f, results); });
  EXPECT_NE(text.find("p2p: median probe 0.035 us; 1 of 8 probes over 2x it; runs next to one: "
                      "rocl-shm 1 of 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rocl-shm    0.034/0.035  0.035/0.160*"), std::string::npos) << text;
  EXPECT_EQ(text.find("absent"), std::string::npos) << text;  // no run, no row

  const std::string csv = testing::TempDir() + "cpu_probes.csv";
  ASSERT_TRUE(write_results_csv(csv, results));
  std::ifstream in(csv);
  const std::string written{std::istreambuf_iterator<char>(in), {}};
  EXPECT_NE(written.find("p2p,cpu-after,rocl-shm,shm,64,1,2,0.16,0.16,0.16,us\n"),
            std::string::npos)
      << written;
  EXPECT_NE(written.find("p2p,cpu-before,ompi-vader,shm,64,1,2,0.015,0.015,0.015,us\n"),
            std::string::npos)
      << written;
  std::remove(csv.c_str());
}

TEST(CpuProbes, NoProbesNoTable) {
  Results results;
  results.stages.push_back(shm_run_with_rocl_mpi());
  EXPECT_EQ(printed([&](std::FILE *f) { print_cpu_probes(f, results); }), "");
}

TEST(CpuProbes, AProbeBetweenTwoCpusIsAShortPositiveTime) {
  const std::vector<int> cpus = usable_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two cpus";
  const double us = probe_cpus(cpus);
  EXPECT_TRUE(std::isfinite(us));
  EXPECT_GT(us, 0);
  EXPECT_LT(us, 1000);  // a hand-off, not a sleep: even a shared cpu yields
  EXPECT_EQ(probe_cpus({cpus[0]}), 0);
}

TEST(ChildProcess, ExitStatusAndOutputInTheLog) {
  const std::string log = temp_path("exit.log");
  const ChildResult r = run_child({{"sh", "-c", "echo hello; echo oops >&2; exit 3"}, {}, log, 30});
  EXPECT_TRUE(r.started);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.describe(), "exit status 3");
  EXPECT_EQ(read_file(log), "hello\noops\n");
  std::remove(log.c_str());
}

TEST(ChildProcess, EnvironmentIsAddedOrReplaced) {
  const std::string log = temp_path("env.log");
  ::setenv("ROCL_COMPARE_TEST", "old", 1);
  const ChildResult r = run_child({{"sh", "-c", "echo $ROCL_COMPARE_TEST $ROCL_COMPARE_NEW"},
                                   {{"ROCL_COMPARE_TEST", "new"}, {"ROCL_COMPARE_NEW", "2"}},
                                   log,
                                   30});
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(read_file(log), "new 2\n");
  std::remove(log.c_str());
}

TEST(ChildProcess, MissingProgramIsNamed) {
  const ChildResult r = run_child({{"/nonexistent/program"}, {}, temp_path("none.log"), 30});
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.describe().find("/nonexistent/program not found"), std::string::npos);
}

TEST(ChildProcess, TimeoutStopsTheProgramAndWhatItStarted) {
  const std::string log = temp_path("timeout.log"), pid_file = temp_path("timeout.pid");
  // A background child that ignores SIGTERM: only the SIGKILL after the
  // grace period ends it.
  const std::string script =
      "sh -c 'trap \"\" TERM; sleep 30' & echo $! > " + pid_file + "; sleep 30";
  const double start = monotonic_seconds();
  const ChildResult r = run_child({{"sh", "-c", script}, {}, log, 0.3});
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.describe().find("timed out"), std::string::npos);
  EXPECT_LT(monotonic_seconds() - start, 10);
  pid_t background = 0;
  std::ifstream(pid_file) >> background;
  ASSERT_GT(background, 0);
  EXPECT_FALSE(running(background));
  std::remove(log.c_str());
  std::remove(pid_file.c_str());
}

// ---- the goals file -------------------------------------------------------------

std::string goals_error(const std::string &text) {
  std::vector<Goal> goals;
  const std::string why = parse_goals(text, "g.txt", goals);
  if (!why.empty()) EXPECT_TRUE(goals.empty());
  return why;
}

TEST(GoalsFile, TheSourceTreesFileParses) {
  const auto &goals = file_goals();
  ASSERT_GE(goals.size(), 11u);
  EXPECT_EQ(goals[0].stage, "p2p");
  EXPECT_EQ(goals[0].subject, "rocl-shm");
  EXPECT_EQ(goals[0].anchor_class, "shm");
  EXPECT_TRUE(goals[0].lower);
  EXPECT_TRUE(goals[0].best_round);
  EXPECT_EQ(goals[0].label, "shm latency <= best shared-memory anchor at every size");
}

TEST(GoalsFile, FieldsCommentsAndTheLabelAsTheRestOfTheLine) {
  std::vector<Goal> goals;
  ASSERT_EQ(parse_goals("# a comment\n\n  \t\n"
                        "threads threads rocl-shm >= 3 ompi-vader,mpich pairs=4|8,size=8 median "
                        "  8 pairs: rate >= 3x  \n"
                        "sustain geomean rocl-tcp-* >= 1.5 others all median,best g\n"
                        "mpi bw rocl >= 1 others size>=4K median bw\n",
                        "g.txt", goals),
            "");
  ASSERT_EQ(goals.size(), 3u);
  const Goal &t = goals[0];
  EXPECT_EQ(t.line, 4);
  EXPECT_FALSE(t.lower);
  EXPECT_DOUBLE_EQ(t.factor, 3);
  EXPECT_EQ(t.anchor_list, (std::vector<std::string>{"ompi-vader", "mpich"}));
  ASSERT_EQ(t.at.size(), 2u);
  EXPECT_TRUE(t.at[0].holds(8, 4));
  EXPECT_TRUE(t.at[0].holds(8, 8));
  EXPECT_FALSE(t.at[0].holds(8, 2));
  EXPECT_FALSE(t.at[1].holds(16, 8));
  EXPECT_EQ(t.label, "8 pairs: rate >= 3x");
  EXPECT_TRUE(goals[1].family);
  EXPECT_EQ(goals[1].subject, "rocl-tcp-");
  EXPECT_TRUE(goals[1].anchor_others);
  EXPECT_TRUE(goals[1].best_round);
  EXPECT_TRUE(goals[2].at[0].holds(4096, 1));
  EXPECT_TRUE(goals[2].at[0].holds(1 << 20, 1));
  EXPECT_FALSE(goals[2].at[0].holds(4095, 1));
}

TEST(GoalsFile, BadLinesAreNamedWithWhatIsWrong) {
  EXPECT_EQ(goals_error("# ok\np2p latency rocl-shm <= 1 class:shm all median\n"),
            "g.txt:2: wants 9 fields, STAGE METRIC SUBJECT OP FACTOR ANCHORS AT FIGURES LABEL "
            "(the label is the rest of the line); found 8");
  EXPECT_EQ(goals_error("p3p latency x <= 1 a all median l\n"),
            "g.txt:1: unknown stage 'p3p' (p2p, threads, ports, sustain, oversub, mpi)");
  EXPECT_EQ(goals_error("p2p speed x <= 1 a all median l\n"),
            "g.txt:1: stage p2p has no metric 'speed' (latency, bandwidth, rate)");
  EXPECT_EQ(goals_error("p2p latency x < 1 a all median l\n"), "g.txt:1: OP '<': <= or >=");
  EXPECT_EQ(goals_error("p2p latency x >= 1 a all median l\n"),
            "g.txt:1: OP >= does not fit latency, where lower is better: use <=");
  EXPECT_EQ(goals_error("p2p bandwidth x <= 1 a all median l\n"),
            "g.txt:1: OP <= does not fit bandwidth, where higher is better: use >=");
  EXPECT_EQ(goals_error("p2p latency x <= 0 a all median l\n"),
            "g.txt:1: FACTOR '0': a number > 0");
  EXPECT_EQ(goals_error("p2p latency x <= 2x a all median l\n"),
            "g.txt:1: FACTOR '2x': a number > 0");
  EXPECT_EQ(goals_error("p2p latency x* <= 1 a all median l\np2p latency * <= 1 a all median l\n"),
            "g.txt:2: SUBJECT '*': a system, or a family ending in one '*'");
  EXPECT_EQ(goals_error("p2p latency x <= 1 class:udp all median l\n"),
            "g.txt:1: ANCHORS class:udp: the classes are inproc, shm, tcp");
  EXPECT_EQ(goals_error("threads threads x >= 1 class:shm all median l\n"),
            "g.txt:1: ANCHORS class:NAME is for stage p2p only");
  EXPECT_EQ(goals_error("p2p latency x <= 1 a,,b all median l\n"),
            "g.txt:1: ANCHORS 'a,,b' has an empty name");
  EXPECT_EQ(goals_error("p2p latency x <= 1 a size<8 median l\n"),
            "g.txt:1: AT 'size<8': a condition is size=V|V, size>=V or pairs=V|V");
  EXPECT_EQ(goals_error("p2p latency x <= 1 a size=8|y median l\n"),
            "g.txt:1: AT 'size=8|y': 'y' is not a number > 0 (K, M, G allowed)");
  EXPECT_EQ(goals_error("p2p latency x <= 1 a size>=8|16 median l\n"),
            "g.txt:1: AT 'size>=8|16': >= takes one value");
  EXPECT_EQ(goals_error("p2p latency x <= 1 a all best l\n"),
            "g.txt:1: FIGURES 'best': median or median,best");
  std::vector<Goal> none;
  EXPECT_NE(load_goals("/nonexistent/goals.txt", none).find("cannot read"), std::string::npos);
}

// The threads and sustain goals of the file read as they did in code.
TEST(GoalsFile, ThreadsAndSustainGoalsOfTheFile) {
  StageRun threads;
  threads.stage = "threads";
  for (const char *name : {"rocl-shm", "ompi-vader", "mpich"}) {
    threads.configs.push_back(Config{name, "", "", "", nullptr, 0});
  }
  auto add = [&](const char *system, double v) {
    threads.summary.push_back({"threads", system, 8, 8, v, v, v, 1, "M msg/s"});
  };
  add("rocl-shm", 20);
  add("ompi-vader", 5);
  add("mpich", 8);
  Results results;
  results.stages.push_back(threads);
  EXPECT_NE(
      goals_printed(results).find("MISS  8 thread pairs: message rate >= 3x the better MPI "
                                  "(0 of 1 point(s); worst: rocl 20.0 vs mpich 8.00 M msg/s)"),
      std::string::npos)
      << goals_printed(results);

  StageRun sustain;
  sustain.stage = "sustain";
  for (const char *name : {"rocl-shm-poll", "rocl-shm-thread", "ompi-vader"}) {
    sustain.configs.push_back(Config{name, "", "", "", nullptr, 4});
  }
  auto figures = [&](const char *system, double compute_ratio, double rtt_ratio) {
    auto one = [&](const char *metric, double v) {
      sustain.summary.push_back({metric, system, 8, 1, v, v, v, 1, ""});
    };
    one("compute-alone", 1);
    one("compute-with-pingpong", compute_ratio);
    one("rtt-alone", 1);
    one("rtt-with-compute", 1 / rtt_ratio);
  };
  figures("rocl-shm-poll", 0.25, 0.25);    // geomean 0.25
  figures("rocl-shm-thread", 0.81, 0.81);  // 0.81: the family's best
  figures("ompi-vader", 0.64, 0.64);       // 0.64
  Results r2;
  r2.stages.push_back(sustain);
  EXPECT_NE(goals_printed(r2).find("ok    sustainability geomean over shm >= Open MPI's "
                                   "(ompi-vader) (1 of 1 point(s); worst: rocl 0.810 vs "
                                   "ompi-vader 0.640)"),
            std::string::npos)
      << goals_printed(r2);
  EXPECT_NE(goals_printed(r2).find("-     sustainability geomean over tcp"), std::string::npos);
}

// ---- --against ----------------------------------------------------------------------

TEST(Against, TwinsFollowRoclsSystemsAndRunWithTheOtherBuildsPrograms) {
  auto seen = std::make_shared<std::string>();
  std::vector<Config> configs = {
      Config{"rocl-shm", "shm", "", "",
             [seen](const RunRequest &r) {
               *seen = r.programs.self;
               RunOutcome out;
               out.ok = true;
               out.samples.push_back({"latency", "rocl-shm", 8, 1, r.round, 1, 1, 1, "us"});
               return out;
             }},
      Config{"ompi-vader", "shm", "", "", nullptr}, Config{"rocl-mpi-shm", "shm", "", "", nullptr}};
  auto other = std::make_shared<Programs>();
  other->self = "/old/tools/rocl-bench/rocl-bench";
  other->mpi_pingpong_rocl = {"", "the other build has no mpi_pingpong.rocl"};
  const auto all = with_other_build(configs, other, "base");
  std::vector<std::string> names;
  for (const auto &c : all) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"rocl-shm", "rocl-shm@base", "ompi-vader",
                                             "rocl-mpi-shm", "rocl-mpi-shm@base"}));
  EXPECT_EQ(all[4].unavailable, "the other build has no mpi_pingpong.rocl");
  const CompareOptions o;
  const Programs mine;
  const RunOutcome out = all[1].run(RunRequest{o, mine, 2, "", ""});
  EXPECT_EQ(*seen, "/old/tools/rocl-bench/rocl-bench");
  ASSERT_EQ(out.samples.size(), 1u);
  EXPECT_EQ(out.samples[0].system, "rocl-shm@base");
  EXPECT_TRUE(is_rocl("rocl-shm@base"));  // never an anchor
}

TEST(Against, RatiosWithTheSpreadOfTheRoundsAndAVerdict) {
  StageRun run;
  run.stage = "p2p";
  auto add = [&](const char *metric, const char *system, std::size_t size,
                 std::vector<double> rounds) {
    for (std::size_t r = 0; r < rounds.size(); ++r) {
      const double v = rounds[r];
      run.result.samples.push_back({metric, system, size, 1, int(r) + 1, v, v * 0.9, v * 1.1, ""});
    }
  };
  add("latency", "rocl-shm", 8, {1.0, 1.1, 1.2});
  add("latency", "rocl-shm@base", 8, {0.8, 0.9, 1.0});  // every round slower: worse
  add("latency", "rocl-shm", 64, {1.0, 1.0, 1.0});
  add("latency", "rocl-shm@base", 64, {0.9, 1.1, 1.0});  // 1/0.9 .. 1/1.1: within
  add("bandwidth", "rocl-shm", 8, {2.0, 2.2, 2.4});
  add("bandwidth", "rocl-shm@base", 8, {1.0, 1.1, 1.2});  // every round ahead: better
  add("latency", "ompi-vader", 8, {0.5, 0.5, 0.5});       // no twin: no ratio
  run.summary = summarize_rounds(run.result.samples);
  Results results;
  results.stages.push_back(run);
  const auto ratios = build_ratios(results, "base");
  ASSERT_EQ(ratios.size(), 3u);
  EXPECT_EQ(ratios[0].metric, "latency");
  EXPECT_EQ(ratios[0].size, 8u);
  EXPECT_NEAR(ratios[0].ratio, 1.1 / 0.9, 1e-12);
  EXPECT_NEAR(ratios[0].spread_min, 1.2, 1e-12);
  EXPECT_NEAR(ratios[0].spread_max, 1.25, 1e-12);
  EXPECT_EQ(ratios[0].rounds, 3);
  EXPECT_EQ(ratios[0].verdict, "worse");
  EXPECT_EQ(ratios[1].size, 64u);
  EXPECT_EQ(ratios[1].verdict, "~");
  EXPECT_EQ(ratios[2].metric, "bandwidth");
  EXPECT_EQ(ratios[2].verdict, "better");
  const std::string table =
      printed([&](std::FILE *f) { print_build_ratios(f, ratios, "base", "/old"); });
  EXPECT_NE(table.find("1 of 3 point(s) worse beyond the noise: p2p latency rocl-shm 8"),
            std::string::npos)
      << table;

  // One round: the spread is that of the repetitions' extremes.
  StageRun one;
  one.stage = "p2p";
  one.result.samples = {{"latency", "rocl-shm", 8, 1, 1, 1.0, 0.9, 1.2, "us"},
                        {"latency", "rocl-shm@base", 8, 1, 1, 1.0, 0.8, 1.0, "us"}};
  one.summary = summarize_rounds(one.result.samples);
  Results r1;
  r1.stages.push_back(one);
  const auto single = build_ratios(r1, "base");
  ASSERT_EQ(single.size(), 1u);
  EXPECT_NEAR(single[0].spread_min, 0.9, 1e-12);
  EXPECT_NEAR(single[0].spread_max, 1.5, 1e-12);
  EXPECT_EQ(single[0].verdict, "~");
}

TEST(Against, OptionsAndTheOtherBuildsLayouts) {
  const CompareOptions o = parsed({"--against", "/b", "--against-name", "old", "--goals", "g"});
  EXPECT_EQ(o.against, "/b");
  EXPECT_EQ(o.against_name, "old");
  EXPECT_EQ(o.goals, "g");
  EXPECT_NE(error_of({"--against-name", "a@b"}).find("--against-name"), std::string::npos);
  Programs p;
  EXPECT_NE(locate_other_build("/nonexistent", p).find("no rocl-bench in /nonexistent"),
            std::string::npos);
}

// ---- rocl-bench mpi -----------------------------------------------------------------

TEST(MpiOptions, DefaultsQuickAndLists) {
  MpiOptions o;
  ASSERT_EQ(parse_mpi_options({}, o), "");
  EXPECT_EQ(o.mpis, (std::vector<std::string>{"rocl", "openmpi", "openmpi-ucx", "mpich"}));
  EXPECT_EQ(o.benches.size(), 9u);  // rma among them: the one-sided group
  EXPECT_EQ(o.rounds, 3);
  ASSERT_EQ(parse_mpi_options({"--quick", "--mpis", "rocl,openmpi-ob1", "--bench", "latency,coll",
                               "--", "--reps", "3"},
                              o),
            "");
  EXPECT_EQ(o.rounds, 1);
  EXPECT_EQ(o.mpis, (std::vector<std::string>{"rocl", "openmpi"}));
  EXPECT_EQ(o.benches, (std::vector<std::string>{"latency", "coll"}));
  EXPECT_EQ(o.extra, (std::vector<std::string>{"--reps", "3"}));
  EXPECT_NE(parse_mpi_options({"--mpis", "lam"}, o).find("no MPI 'lam'"), std::string::npos);
  EXPECT_NE(parse_mpi_options({"--bench", "x"}, o).find("no benchmark 'x'"), std::string::npos);
  EXPECT_NE(parse_mpi_options({"--mt-mode", "x"}, o).find("--mt-mode"), std::string::npos);
  EXPECT_NE(parse_mpi_options({"--rounds", "0"}, o).find("--rounds"), std::string::npos);
}

TEST(MpiOptions, CollectivesAndThreadedLatenciesAreLowerIsBetter) {
  for (const char *m :
       {"mt_latency", "mt_latency_comm", "barrier", "bcast", "reduce", "allreduce", "pingpong",
        "pingpong-onecpu", "ring", "ring-busy", "pingpong-busy", "put_latency", "cas_latency"}) {
    EXPECT_TRUE(lower_is_better(m)) << m;
  }
  for (const char *m : {"bw", "bibw", "mt_rate", "mt_mprobe_rate", "mbw_mr_rate", "rate", "put_bw"})
    EXPECT_FALSE(lower_is_better(m)) << m;
}

// ---- the oversub stage -----------------------------------------------------------

TEST(Oversub, StageOptionsAndQuickCounts) {
  const CompareOptions o = parsed({"oversub", "--oversub-iters", "2K"});
  EXPECT_EQ(o.stages, (std::vector<std::string>{"oversub"}));
  EXPECT_EQ(o.oversub_iters, 2048);
  EXPECT_EQ(parsed({"--quick"}).oversub_iters, 50);
  EXPECT_EQ(parsed({"--quick", "--oversub-iters", "7"}).oversub_iters, 7);
  EXPECT_NE(error_of({"--oversub-iters", "0"}).find("--oversub-iters"), std::string::npos);
  const CompareOptions rank = parsed({"--rank", "oversub-threads", "--oversub", "ring:2"});
  EXPECT_EQ(rank.rank, "oversub-threads");
  EXPECT_EQ(rank.oversub, "ring:2");
}

TEST(Oversub, PointsMembersAndCpus) {
  const auto ring = parse_oversub_point("ring:4");
  ASSERT_TRUE(ring);
  EXPECT_EQ(ring->metric, "ring");
  EXPECT_EQ(ring->value, 4);
  EXPECT_EQ(ring->text(), "ring:4");
  EXPECT_FALSE(parse_oversub_point("ring"));
  EXPECT_FALSE(parse_oversub_point("walk:2"));
  EXPECT_FALSE(parse_oversub_point("ring:0"));
  EXPECT_FALSE(parse_oversub_point("ring:65"));
  // 2 cpus: N per cpu is 2N threads; ping-pong pairs, a pair's sides on both cpus
  EXPECT_EQ(oversub_members({"ring", 1}, 2), 2);
  EXPECT_EQ(oversub_members({"ring", 4}, 2), 8);
  EXPECT_EQ(oversub_members({"pingpong", 2}, 2), 4);
  EXPECT_EQ(oversub_members({"rate", 1}, 2), 2);
  EXPECT_EQ(oversub_members({"pingpong", 1}, 3), 2);  // an odd cpu count rounds down to pairs
  EXPECT_EQ(oversub_members({"pingpong-onecpu", 2}, 8), 2);
  EXPECT_EQ(oversub_members({"ring-busy", 2}, 2), 2);  // busy loops are not members
  EXPECT_EQ(oversub_members({"pingpong-busy", 1}, 4), 4);
  const std::vector<int> cpus = {3, 5};
  EXPECT_EQ(oversub_cpu({"ring", 2}, cpus, 0), 3);
  EXPECT_EQ(oversub_cpu({"ring", 2}, cpus, 1), 5);
  EXPECT_EQ(oversub_cpu({"ring", 2}, cpus, 2), 3);
  EXPECT_EQ(oversub_cpu({"pingpong-onecpu", 2}, cpus, 1), 3);
  EXPECT_EQ(oversub_size("ring", "rocl-inproc"), 8u);
  EXPECT_EQ(oversub_size("pingpong", "futex"), 0u);
  EXPECT_EQ(oversub_size("barrier", "mpich"), 0u);
}

TEST(Oversub, RowsNameTheirSystemOrTakeTheRuns) {
  const auto samples = oversub_samples(parse_rows("benchmark,size_bytes,pairs,median,min,max,unit\n"
                                                  "futex/pingpong-onecpu,0,2,1.5,1.4,1.6,us\n"
                                                  "[0] ring,8,4,3,2,4,us\n"
                                                  "allreduce,8,1,20,20,20,us\n"
                                                  "rate,8,2,1.5,1,2,Mmsg/s\n"),
                                       "rocl-shm", 3);
  ASSERT_EQ(samples.size(), 4u);
  EXPECT_EQ(samples[0].system, "futex");
  EXPECT_EQ(samples[0].metric, "pingpong-onecpu");
  EXPECT_EQ(samples[0].pairs, 2);
  EXPECT_EQ(samples[1].system, "rocl-shm");
  EXPECT_EQ(samples[1].metric, "ring");
  EXPECT_EQ(samples[1].round, 3);
  EXPECT_EQ(samples[2].metric, "allreduce");
  EXPECT_EQ(samples[3].unit, "M msg/s");
}

// A point that timed out counts as a figure of its run, shows as
// "timeout", is offered to the later rounds (which skip it), and leaves
// the summaries; the CSV says so.
TEST(Oversub, TimeoutsAreFiguresOfTheirRunAndShowAsSuch) {
  CompareOptions o = parsed({"--rounds", "2"});
  Programs programs;  // no cpus: no probes
  std::vector<std::size_t> offered;
  Config c{"rocl-x",
           "",
           "",
           "",
           [&](const RunRequest &r) {
             offered.push_back(r.timed_out != nullptr ? r.timed_out->size() : 99);
             RunOutcome out;
             out.ok = true;
             out.samples.push_back({"ring", "rocl-x", 8, 1, r.round, 2, 2, 2, "us"});
             if (r.round == 1) {
               out.timeouts.push_back({"ring", "rocl-x", 8, 4, r.round, 10, false});
             } else {
               out.timeouts.push_back({"ring", "rocl-x", 8, 4, r.round, 10, true});
             }
             return out;
           },
           2};
  std::FILE *sink = std::tmpfile();
  Progress progress(2, sink);
  StageRun run;
  run.stage = "oversub";
  run.configs = {c};
  run_stage("oversub", run.configs, o, programs, ::testing::TempDir(), progress, run.result);
  std::fclose(sink);
  EXPECT_EQ(offered, (std::vector<std::size_t>{0, 1}));
  EXPECT_TRUE(run.result.failed.empty());
  ASSERT_EQ(run.result.timeouts.size(), 2u);
  run.result.samples.push_back(
      {"ring", "rocl-x", 8, 4, 1, 9, 9, 9, "us"});  // a round that finished
  run.summary = summarize_rounds(run.result.samples);
  drop_timed_out(run);
  EXPECT_EQ(run.cell("ring", "rocl-x", 8, 1), "2.00");
  EXPECT_EQ(run.cell("ring", "rocl-x", 8, 4), "timeout");
  EXPECT_EQ(run.find("ring", "rocl-x", 8, 4), nullptr);
  EXPECT_TRUE(oversub_timed_out(run, "ring", "rocl-x", 4));
  EXPECT_FALSE(oversub_timed_out(run, "ring", "rocl-x", 1));

  Results results;
  results.stages.push_back(run);
  const std::string path = ::testing::TempDir() + "/oversub.csv";
  ASSERT_TRUE(write_results_csv(path, results));
  const std::string csv = read_file(path);
  EXPECT_NE(csv.find("oversub,ring,rocl-x,,8,4,1,,,,timeout\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("oversub,ring,rocl-x,,8,4,2,,,,timeout-skipped\n"), std::string::npos);
}

// A twin's timeouts carry its name, and it sees only its own earlier ones.
TEST(Oversub, TwinsTimeOutUnderTheirOwnNames) {
  auto offered = std::make_shared<std::vector<std::string>>();
  std::vector<Config> configs = {
      Config{"rocl-inproc", "", "", "", [offered](const RunRequest &r) {
               for (const auto &t : *r.timed_out) {
                 offered->push_back(t.system + " " + t.metric);
               }
               RunOutcome out;
               out.ok = true;
               out.timeouts.push_back({"ring", "rocl-inproc", 8, 4, r.round, 10, false});
               return out;
             }}};
  const auto all = with_other_build(configs, std::make_shared<Programs>(), "base");
  ASSERT_EQ(all.size(), 2u);
  const std::vector<TimedOut> before = {{"ring", "rocl-inproc", 8, 4, 1, 10, false},
                                        {"pingpong", "rocl-inproc@base", 8, 2, 1, 10, false}};
  const CompareOptions o;
  const Programs mine;
  const RunOutcome out = all[1].run(RunRequest{o, mine, 2, "", "", &before});
  EXPECT_EQ(*offered, (std::vector<std::string>{"rocl-inproc pingpong"}));
  ASSERT_EQ(out.timeouts.size(), 1u);
  EXPECT_EQ(out.timeouts[0].system, "rocl-inproc@base");
  EXPECT_EQ(
      with_other_build(configs, std::make_shared<Programs>(), "base", "no oversub")[1].unavailable,
      "no oversub");
}

TEST(Oversub, GoalsSetARowBesideAnotherRow) {
  std::vector<Goal> goals;
  ASSERT_EQ(parse_goals("oversub ring rocl-inproc <= 0.5 pingpong-onecpu:futex,yield/pairs=2 "
                        "pairs=2|4 median ring <= 2x futex\n",
                        "g.txt", goals),
            "");
  ASSERT_EQ(goals.size(), 1u);
  EXPECT_EQ(goals[0].anchor_metric, "pingpong-onecpu");
  EXPECT_EQ(goals[0].anchor_list, (std::vector<std::string>{"futex", "yield"}));
  ASSERT_EQ(goals[0].anchor_at.size(), 1u);
  EXPECT_TRUE(goals[0].anchor_at[0].holds(0, 2));
  EXPECT_FALSE(goals[0].anchor_at[0].holds(0, 1));

  StageRun run;
  run.stage = "oversub";
  for (const char *name : {"limits", "rocl-inproc"}) {
    run.configs.push_back(Config{name, "", "", "", nullptr, 0});
  }
  auto add = [&](const char *metric, const char *system, std::size_t size, int pairs, double us) {
    run.summary.push_back({metric, system, size, pairs, us, us, us, 1, "us"});
  };
  add("pingpong-onecpu", "futex", 0, 2, 2.0);
  add("pingpong-onecpu", "yield", 0, 2, 3.0);
  add("pingpong-onecpu", "futex", 0, 4, 0.1);  // another point: not the anchor
  add("ring", "rocl-inproc", 8, 1, 100);       // not judged (AT pairs=2|4)
  add("ring", "rocl-inproc", 8, 2, 3.5);       // 3.5 x 0.5 <= 2: met
  add("ring", "rocl-inproc", 8, 4, 5.0);       // 5 x 0.5 > 2: missed
  Results results;
  results.stages.push_back(run);
  EXPECT_NE(goals_printed(results, goals)
                .find("MISS  ring <= 2x futex (1 of 2 point(s); worst: 4/cpu rocl 5.00 vs futex "
                      "pingpong-onecpu 2/cpu 2.00)"),
            std::string::npos)
      << goals_printed(results, goals);
  // The file's oversub goals parse and name metrics of the stage.
  int oversub = 0;
  for (const auto &g : file_goals()) oversub += g.stage == "oversub" ? 1 : 0;
  EXPECT_GE(oversub, 4);
}

TEST(Oversub, BadRowAnchorsAreNamed) {
  EXPECT_EQ(goals_error("oversub ring x <= 1 walk:futex all median l\n"),
            "g.txt:1: ANCHORS 'walk:futex': stage oversub has no metric 'walk' (pingpong, "
            "pingpong-onecpu, ring, rate, pingpong-busy, ring-busy, barrier, bcast, reduce, "
            "allreduce)");
  EXPECT_EQ(goals_error("oversub ring x <= 1 rate:rocl-inproc all median l\n"),
            "g.txt:1: ANCHORS 'rate:rocl-inproc': rate and ring are not better the same way (a "
            "time beside a rate)");
  EXPECT_EQ(goals_error("oversub ring x <= 1 pingpong:futex/pairs<2 all median l\n"),
            "g.txt:1: ANCHORS 'pingpong:futex/pairs<2': AT 'pairs<2': a condition is size=V|V, "
            "size>=V or pairs=V|V");
  EXPECT_EQ(goals_error("oversub ring x <= 1 pingpong:/pairs=2 all median l\n"),
            "g.txt:1: ANCHORS 'pingpong:/pairs=2' has an empty name");
}

}  // namespace
}  // namespace rocl_bench::compare
