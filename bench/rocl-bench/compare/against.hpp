// against.hpp - `rocl-bench compare --against DIR`: rocl's own systems of
// this build next to those of another build (an older commit's), in the
// same rounds, and the ratios this / other with the spread that says
// whether a difference stands out of the noise.
//
// The other build may be older than this one: of its rocl-bench only the
// command lines compare already gave before --against existed are used
// (the benchmarks' options, --transport, --roclrun, compare --rank), and
// it may have the old layout (tools/rocl-bench/ rather than
// bench/rocl-bench/).
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "programs.hpp"
#include "stage.hpp"

namespace rocl_bench::compare {

struct Results;

// `mine` with rocl's programs replaced by those of the build in `dir`:
// its rocl-bench (bench/rocl-bench/ or tools/rocl-bench/), its roclrun
// (tools/roclrun/) and its anchors folder (mpi_pingpong.rocl). Returns ""
// or why the build cannot be used (no rocl-bench, no roclrun).
std::string locate_other_build(const std::string &dir, Programs &mine);

// `configs` with each of rocl's own systems followed by its twin from the
// other build, named "<name>@<suffix>", so that the rotation of a round
// runs the two one after the other. A twin that cannot run there (its
// build has no mpi_pingpong.rocl, or `why_not` is set) is n/a with the
// reason.
std::vector<Config> with_other_build(std::vector<Config> configs,
                                     std::shared_ptr<const Programs> other,
                                     const std::string &suffix, const std::string &why_not = "");

// Why the other build's rocl-bench cannot run `stage` ("" when it can): a
// stage added after it was built (oversub) is not in its compare --help.
std::string stage_missing_in(const Programs &other, const std::string &stage);

// One point of a system measured in both builds.
struct BuildRatio {
  std::string stage, metric, system;
  std::size_t size = 0;
  int pairs = 1;
  double mine = 0, other = 0;  // medians of the rounds
  double ratio = 0;            // mine / other
  double spread_min = 0, spread_max = 0;
  int rounds = 0;       // rounds measured in both; the spread is of their ratios
  std::string verdict;  // "worse", "better" (the whole spread on one side of 1), "~" (within
                        // it), "?" (no spread: one round of one repetition)
};

// The ratios of every point measured in both builds. The spread is the
// lowest and highest ratio of one round's figures; with a single round, the
// ratio of the repetitions' extremes (this build's min over the other's
// max, and max over min).
std::vector<BuildRatio> build_ratios(const Results &results, const std::string &suffix);

// One table per stage and metric; then how many points are worse beyond
// the noise.
void print_build_ratios(std::FILE *out, const std::vector<BuildRatio> &ratios,
                        const std::string &suffix, const std::string &dir);

// against.csv: stage,metric,system,size_bytes,pairs,this,other,ratio,
// spread_min,spread_max,rounds,verdict. False (errno set) on failure.
bool write_build_ratios_csv(const std::string &path, const std::vector<BuildRatio> &ratios);

}  // namespace rocl_bench::compare
