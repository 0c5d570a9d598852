#!/usr/bin/env python3
"""tcp_table.py - the tcp table of hosts_bench.sh from its rows.

Rows: ROUND,SYSTEM,LATENCY_US,BANDWIDTH_MBS ("-" where a system has no
figure). Prints each system's median over the rounds with the range, the
path's limit per round (the lowest latency of the bare socket and sockperf,
the highest bandwidth of the bare socket and iperf3), and rocl's ratios to
the path and to Open MPI taken within each round (the machine's speed
drifts between rounds; within one it is the same for every system).
"""
import statistics
import sys
from collections import defaultdict

LABELS = [
    ("bare-poll", "bare, polling recv"),
    ("bare-block", "bare, blocking recv"),
    ("iperf3", "iperf3 (cubic)"),
    ("sockperf", "sockperf (14 B)"),
    ("rocl", "rocl tcp"),
    ("rocl-spin", "rocl tcp, ROCL_WAIT=spin"),
    ("ompi", "Open MPI tcp"),
]
PATH_LATENCY = ("bare-poll", "bare-block", "sockperf")
PATH_BANDWIDTH = ("bare-poll", "bare-block", "iperf3")


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def summary(values, digits):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    mid = statistics.median(values)
    if len(values) == 1:
        return f"{mid:.{digits}f}"
    return f"{mid:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main():
    rounds = defaultdict(dict)  # round -> system -> (latency, bandwidth)
    with open(sys.argv[1]) as rows:
        for line in rows:
            fields = line.strip().split(",")
            if len(fields) != 4:
                continue
            rounds[fields[0]][fields[1]] = (number(fields[2]), number(fields[3]))

    def column(system, index):
        return [r[system][index] for r in rounds.values() if system in r]

    def path(r, systems, index, best):
        values = [r[s][index] for s in systems if s in r and r[s][index] is not None]
        return best(values) if values else None

    def ratios(r_of, index, system="rocl"):
        out = []
        for r in rounds.values():
            mine = r.get(system, (None, None))[index]
            theirs = r_of(r)
            if mine is not None and theirs:
                out.append(mine / theirs)
        return out

    width = 34
    print(f"{'':26} {'8 B (us)':>{width}} {'1 MiB (MB/s)':>{width}}")
    for system, label in LABELS:
        print(f"{label:26} {summary(column(system, 0), 2):>{width}} "
              f"{summary(column(system, 1), 0):>{width}}")
    lat_path = [path(r, PATH_LATENCY, 0, min) for r in rounds.values()]
    bw_path = [path(r, PATH_BANDWIDTH, 1, max) for r in rounds.values()]
    print(f"{'the path (best)':26} {summary(lat_path, 2):>{width}} "
          f"{summary(bw_path, 0):>{width}}")
    to_path = (ratios(lambda r: path(r, PATH_LATENCY, 0, min), 0),
               ratios(lambda r: path(r, PATH_BANDWIDTH, 1, max), 1))
    to_ompi = (ratios(lambda r: r.get("ompi", (None, None))[0], 0),
               ratios(lambda r: r.get("ompi", (None, None))[1], 1))
    print(f"{'rocl / the path':26} {summary(to_path[0], 2):>{width}} "
          f"{summary(to_path[1], 2):>{width}}")
    print(f"{'rocl / Open MPI':26} {summary(to_ompi[0], 2):>{width}} "
          f"{summary(to_ompi[1], 2):>{width}}")
    spin_path = (ratios(lambda r: path(r, PATH_LATENCY, 0, min), 0, "rocl-spin"),
                 ratios(lambda r: path(r, PATH_BANDWIDTH, 1, max), 1, "rocl-spin"))
    print(f"{'rocl spin / the path':26} {summary(spin_path[0], 2):>{width}} "
          f"{summary(spin_path[1], 2):>{width}}")


if __name__ == "__main__":
    main()
