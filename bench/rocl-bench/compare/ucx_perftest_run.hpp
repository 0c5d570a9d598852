// ucx_perftest_run.hpp - UCX's own benchmark as an anchor: ucx_perftest's
// server and client on 127.0.0.1, pinned with taskset to the first two cpus,
// running one batch file (-b) of tag_lat and tag_bw lines, one per size and
// repetition, so that a round is one connection.
//
// ucx_perftest counts iterations, not time: the first run of a
// configuration is a calibration batch (a tenth of --time per point, from
// a rough guess) whose per-iteration times size the lines of every later
// batch to last --time each. Figures: tag_lat's overall latency (one-way,
// us), tag_bw's overall bandwidth (MiB/s, turned into GB/s) and message
// rate. UCX_TLS picks the transports: sm (shared memory) or tcp (with
// UCX_NET_DEVICES=lo).
#pragma once

#include <string>

#include "stage.hpp"

namespace rocl_bench::compare {

RunOutcome run_ucx_perftest(const RunRequest &r, const std::string &system, const std::string &tls);

}  // namespace rocl_bench::compare
