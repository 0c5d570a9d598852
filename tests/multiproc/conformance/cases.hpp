// cases.hpp - the cases of the conformance suite, one function per case,
// each run by rank 0 and rank 1 (harness.hpp).
#pragma once

#include "harness.hpp"

namespace conf {

// cases_messaging.cpp
void case_ordering(Rank &r);
void case_wildcards(Rank &r);
void case_timeouts(Rank &r);
void case_immediate(Rank &r);
void case_sizes(Rank &r);
// cases_load.cpp
void case_threads(Rank &r);
void case_slow_receiver(Rank &r);
void case_unreceived(Rank &r);
// cases_directory.cpp
void case_directory(Rank &r);
void case_stale_cache(Rank &r);
// cases_process.cpp (need real processes: not run with --threads)
void case_killed_peer(Rank &r);
void case_wrong_secret(Rank &r);
// Helper processes those cases start (this executable with --victim or
// --intruder as its first argument).
int victim_main(int argc, char **argv);
int intruder_main(int argc, char **argv);

}  // namespace conf
