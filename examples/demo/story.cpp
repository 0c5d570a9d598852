// story.cpp - what rank 0 prints: each phase's title and explanation, the
// lines of every process's workers, and the table of figures at the end.
// Every process runs the same steps (the barriers and gathers between
// processes must match); only rank 0 prints.
#include <algorithm>
#include <cstdio>
#include <sstream>
#include <thread>

#include "demo.hpp"

namespace demo {
namespace {

struct Story {
  Story(Shared &shared, Job &the_job) : s(shared), job(the_job) {}

  Shared &s;
  Job &job;
  const bool loud = job.rank() == 0;  // only rank 0 prints
  std::string between_via;            // the transport between processes
  std::vector<double> query_us;       // every worker's discovery query
  double rate_messages = 0, rate_seconds = 0;

  // One phase, in step with the other processes: prints its title and
  // explanation, lets the workers run it (main does `meanwhile` while they
  // do), then prints every process's lines (`first`, then its workers').
  template <class Meanwhile>
  void phase(const char *title, const std::string &explanation, Meanwhile meanwhile,
             const std::string &first = "") {
    s.now.store(title);
    job.barrier();
    if (loud) std::printf("\n== %s ==\n%s\n", title, explanation.c_str());
    std::fflush(stdout);
    for (auto &line : s.lines) line.clear();
    s.extra_line.clear();
    s.sync.arrive_and_wait();
    meanwhile();
    s.sync.arrive_and_wait();
    std::string text = first.empty() ? "" : first + "\n";
    for (const auto &line : s.lines) {
      if (!line.empty()) text += (first.empty() ? "" : "  ") + line + "\n";
    }
    for (const std::string &lines : job.gather(text)) std::printf("%s", indent(lines).c_str());
    if (!s.extra_line.empty()) std::printf("  %s\n", s.extra_line.c_str());
  }
  void phase(const char *title, const std::string &explanation) {
    phase(title, explanation, [] {});
  }
  static std::string indent(const std::string &lines) {
    std::string out;
    for (std::size_t pos = 0; pos < lines.size();) {
      std::size_t end = lines.find('\n', pos);
      if (end == std::string::npos) end = lines.size();
      out += "  " + lines.substr(pos, end - pos) + "\n";
      pos = end + 1;
    }
    return out;
  }
  std::string worker(int rank, int thread) const { return worker_name(rank, thread, s.threads); }

  void resources() {
    const auto &me = job.processes()[static_cast<std::size_t>(job.rank())];
    const char *title = job.size() > 1 ? "1. Processes and resources" : "1. Resources";
    std::string text =
        "Each worker thread registers itself in the directory as a resource with attributes\n"
        "(rocl_register) and gets a global id (gid). Messages go to a resource, whatever\n"
        "thread, process or node it lives on.";
    if (job.size() > 1) {
      text += "\nEach process's main thread registered {type=demo-main, rank=R} first, and the\n" +
              std::to_string(job.size()) + " processes found each other in the job's directory (" +
              number(job.discovery_seconds() * 1e3) + " ms).";
    }
    phase(
        title, text, [] {},
        (job.size() > 1 ? "rank " + std::to_string(job.rank()) + ": " : "") + "pid " +
            std::to_string(me.pid) + ", context " + hex(me.context) + ", transports " +
            me.transports);
  }

  void discovery() {
    phase("2. Discovery",
          "Then every worker asks the directory for all resources {type=worker}, leaving\n"
          "rank, thread and name unspecified for the directory to fill in: a multi-answer\n"
          "query (rocl_query_start / rocl_query_next / rocl_query_stop)" +
              std::string(job.size() > 1 ? " that sees every process" : "") +
              ".\nAnswers come in gid order; they are printed by rank and thread" +
              (job.size() > 1 ? " ('|' between processes)." : "."));
    std::string mine;
    for (double us : s.query_us) mine += std::to_string(us) + " ";
    for (const std::string &text : job.gather(mine)) {
      std::istringstream in(text);
      for (double us; in >> us;) query_us.push_back(us);
    }
  }

  void ring() {
    std::string order;
    for (int r = 0; r < job.size(); ++r) {
      for (int t = 0; t < s.threads; ++t) order += worker(r, t) + " -> ";
    }
    order += worker(0, 0);
    phase("3. Ring",
          "A token goes round the ring of workers " + std::to_string(s.settings.ring_laps) +
              " times (for at most " + seconds_text(s.settings.ring_seconds) + "):\n  " + order +
              "\nInside a process a worker sends on the very buffer it received: only a pointer\n"
              "changes hands (zero-copy hand-off)" +
              (job.size() > 1 ? "; between processes the transport copies the bytes." : "."));
    if (!loud) return;
    std::printf("  the token went round %ld times: %ld hops", s.ring_laps, s.ring_hops);
    if (job.size() > 1) std::printf(" (%ld between processes)", s.ring_crossings);
    std::printf(" in %.2f s, %s us per hop\n", s.ring_seconds, number(hop_us()).c_str());
    if (const int cpus = usable_cpus(); cpus < job.size() * s.threads) {
      std::printf(
          "  (%d workers on %d cpus: each hop waits until the receiver's cpu comes to it;\n"
          "  a waiter that shares its cpu yields it at once, ROCL_WAIT=%s)\n",
          job.size() * s.threads, cpus, option_in_force("ROCL_WAIT").c_str());
    }
  }
  double hop_us() const { return s.ring_seconds / static_cast<double>(s.ring_hops) * 1e6; }

  void ping_between() {
    phase("4. Ping-pong between processes",
          worker(0, 0) + " (rank 0) sends a message to " + worker(1, 0) +
              " (rank 1), which sends it back in the buffer it\n"
              "received; one-way latency = round trip / 2, payload checked at the end.\n"
              "Between processes rocl uses " +
              between_via + " (ROCL_TRANSPORTS=" + option_in_force("ROCL_TRANSPORTS") +
              "; run with ROCL_TRANSPORTS=" + (between_via == "tcp" ? "shm" : "tcp") +
              " to compare).");
    if (!loud) return;
    std::printf("  %-7s %11s  %15s\n", "size", "round trips", "one-way latency");
    for (const PingResult &p : s.between) {
      std::printf("  %-7s %11ld  %12s us", size_text(p.size).c_str(), p.round_trips,
                  number(p.one_way_us).c_str());
      if (p.size >= 64 * 1024) std::printf("  (%s GB/s)", number(gb_per_s(p)).c_str());
      std::printf("\n");
    }
  }
  static double gb_per_s(const PingResult &p) {
    return static_cast<double>(p.size) / (p.one_way_us * 1e-6) / 1e9;
  }

  void ping_inside() {
    const std::string &transports = job.processes()[0].transports;
    const bool inproc =
        transports.starts_with("inproc") || transports.find(",inproc") != std::string::npos;
    const std::string via =
        inproc ? "the in-process hand-off (inproc): only a pointer moves, so size hardly matters."
               : transports.substr(0, transports.find(',')) +
                     " (inproc is not in ROCL_TRANSPORTS): the bytes are copied.";
    const std::string game =
        job.size() > 1 ? worker(0, 0) + " and " + worker(0, 1) +
                             ", two threads of rank 0, play the same game, through\n"
                       : worker(0, 0) + " sends a message to " + worker(0, 1) +
                             ", which sends it back in the buffer it received;\n"
                             "one-way latency = round trip / 2, payload checked at the end.\n"
                             "They use ";
    phase(job.size() > 1 ? "5. Ping-pong inside a process" : "4. Ping-pong", game + via);
    if (!loud) return;
    const bool both = !s.between.empty();
    if (both) {
      std::printf("  one-way latency  %17s  %16s\n", "between processes", "inside a process");
    } else {
      std::printf("  %-7s %11s  %15s\n", "size", "round trips", "one-way latency");
    }
    for (std::size_t i = 0; i < s.inside.size(); ++i) {
      const PingResult &p = s.inside[i];
      if (both) {
        std::printf("  %-15s  %14s us  %13s us\n", size_text(p.size).c_str(),
                    number(s.between[i].one_way_us).c_str(), number(p.one_way_us).c_str());
      } else {
        std::printf("  %-7s %11ld  %12s us\n", size_text(p.size).c_str(), p.round_trips,
                    number(p.one_way_us).c_str());
      }
    }
  }

  void rate() {
    phase(job.size() > 1 ? "6. Message rate" : "5. Message rate",
          "For " + seconds_text(s.settings.rate_seconds) + " every worker sends 8 B messages to " +
              (job.size() > 1 ? "the worker of its thread number in\n"
                                "the next process, 64 at a time, and receives those of the "
                                "previous process."
                              : "its right neighbour on the\n"
                                "ring, 64 at a time, and receives its left neighbour's."),
          [this] {
            std::this_thread::sleep_for(std::chrono::duration<double>(s.settings.rate_seconds));
            s.stop_rate.store(true, std::memory_order_release);
          });
    long received = 0;
    double longest = 0;
    for (int i = 0; i < s.threads; ++i) {
      received += s.received[static_cast<std::size_t>(i)];
      longest = std::max(longest, s.busy[static_cast<std::size_t>(i)]);
    }
    for (const std::string &text :
         job.gather(std::to_string(received) + " " + std::to_string(longest))) {
      std::istringstream in(text);
      double messages = 0, seconds = 0;
      in >> messages >> seconds;
      rate_messages += messages;
      rate_seconds = std::max(rate_seconds, seconds);
    }
    if (loud) {
      std::printf("  %d workers received %.0f messages in %.2f s\n", job.size() * s.threads,
                  rate_messages, rate_seconds);
    }
  }

  void summary() {
    struct Row {
      std::string figure, value, unit;
    };
    std::vector<Row> rows;
    const bool many = job.size() > 1;
    if (many) {
      rows.push_back({"processes x worker threads",
                      std::to_string(job.size()) + " x " + std::to_string(s.threads), ""});
      rows.push_back({"transport between processes", between_via,
                      "(ROCL_TRANSPORTS=" + option_in_force("ROCL_TRANSPORTS") + ")"});
    } else {
      rows.push_back({"worker threads", std::to_string(s.threads), ""});
    }
    std::vector<double> q = query_us;
    std::sort(q.begin(), q.end());
    rows.push_back({"directory query, all workers (median)", number(q[q.size() / 2]), "us"});
    rows.push_back({"ring hop, " + std::to_string(job.size() * s.threads) + " workers",
                    number(hop_us()), "us"});
    for (const PingResult &p : s.between) {
      rows.push_back({"one-way latency " + size_text(p.size) + ", between processes",
                      number(p.one_way_us), "us"});
    }
    if (many) {
      rows.push_back({"bandwidth with 1 MiB messages, between processes",
                      number(gb_per_s(s.between.back())), "GB/s"});
    }
    const char *inside = many ? ", inside a process" : "";
    rows.push_back(
        {"one-way latency 8 B" + std::string(inside), number(s.inside.front().one_way_us), "us"});
    rows.push_back({"one-way latency 1 MiB" + std::string(inside),
                    number(s.inside.back().one_way_us), "us (a pointer moves, no byte)"});
    const double rate = rate_messages / rate_seconds;
    rows.push_back({"message rate, 8 B, " + std::to_string(job.size() * s.threads) +
                        (many ? " streams between processes" : " streams"),
                    number(rate >= 1e6 ? rate / 1e6 : rate / 1e3),
                    rate >= 1e6 ? "M msg/s" : "k msg/s"});
    rows.push_back(
        {"memcpy of 1 MiB, to compare", number(memcpy_gb_per_s()), "GB/s (a real copy)"});
    std::printf("\n== Summary ==\n%-50s %8s  %s\n", "figure", "value", "unit");
    for (const Row &r : rows) {
      std::printf("%-50s %8s  %s\n", r.figure.c_str(), r.value.c_str(), r.unit.c_str());
    }
  }

  void tell() {
    between_via = transport_between(job);
    resources();
    for (Phase p : s.phases) {
      switch (p) {
        case Phase::find_others:
          discovery();
          break;
        case Phase::ring:
          ring();
          break;
        case Phase::ping_between:
          ping_between();
          break;
        case Phase::ping_inside:
          ping_inside();
          break;
        case Phase::rate:
          rate();
          break;
      }
    }
    s.now.store("the end");
    job.barrier();             // every process has finished every phase:
    s.sync.arrive_and_wait();  // the workers may leave the directory
  }
};

}  // namespace

void tell_story(Shared &s, Job &job) {
  Story story(s, job);
  story.tell();
  if (job.rank() == 0) story.summary();
  std::fflush(stdout);
}

}  // namespace demo
