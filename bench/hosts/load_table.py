#!/usr/bin/env python3
"""load_table.py - the overloaded machine's table of hosts_bench.sh --load.

Rows: ROUND,loadK-SYSTEM,LATENCY_US,BANDWIDTH_MBS with SYSTEM rocl, ompi
or bare (a bare socket with blocking receives). Prints, for each K (busy
loops per cpu), each system's median over the rounds with the range, and
rocl's ratios to Open MPI and to the bare socket taken within each round
(latency: theirs over rocl's, so that above 1 means rocl is faster in
every ratio column).
"""
import sys
from collections import defaultdict

from tcp_table import number, summary


def main():
    # load -> round -> system -> (latency, bandwidth)
    table = defaultdict(lambda: defaultdict(dict))
    with open(sys.argv[1]) as rows:
        for line in rows:
            fields = line.strip().split(",")
            if len(fields) != 4 or not fields[1].startswith("load"):
                continue
            load, system = fields[1][4:].split("-", 1)
            table[int(load)][fields[0]][system] = (number(fields[2]), number(fields[3]))

    print("| busy loops per cpu | rocl 8 B (us) | Open MPI 8 B (us) | bare socket 8 B (us) "
          "| Open MPI / rocl | bare / rocl | rocl 1 MiB (MB/s) | Open MPI 1 MiB (MB/s) "
          "| bare 1 MiB (MB/s) | rocl / Open MPI | rocl / bare |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for load in sorted(table):
        rounds = table[load].values()

        def column(system, index):
            return [r[system][index] for r in rounds if system in r]

        def ratio(index, upper, lower):
            values = []
            for r in rounds:
                if upper in r and lower in r:
                    a, b = r[upper][index], r[lower][index]
                    if a is not None and b:
                        values.append(a / b)
            return summary(values, 2)

        print(f"| {load} | {summary(column('rocl', 0), 1)} | {summary(column('ompi', 0), 1)} "
              f"| {summary(column('bare', 0), 1)} "
              f"| {ratio(0, 'ompi', 'rocl')} | {ratio(0, 'bare', 'rocl')} "
              f"| {summary(column('rocl', 1), 0)} | {summary(column('ompi', 1), 0)} "
              f"| {summary(column('bare', 1), 0)} "
              f"| {ratio(1, 'rocl', 'ompi')} | {ratio(1, 'rocl', 'bare')} |")


if __name__ == "__main__":
    main()
