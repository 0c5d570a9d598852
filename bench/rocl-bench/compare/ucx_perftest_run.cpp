// ucx_perftest_run.cpp - see ucx_perftest_run.hpp.
#include "ucx_perftest_run.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "report.hpp"

namespace rocl_bench::compare {
namespace {

// One line of a batch: a test of one size, `n` iterations after `warmup`.
struct BatchLine {
  char kind;  // 'L' tag_lat, 'B' tag_bw
  std::size_t size;
  int rep;
  long n, warmup;
  std::string label() const {
    return std::string(1, kind) + std::to_string(size) + "r" + std::to_string(rep);
  }
};

// Seconds per iteration, per configuration, kind and size: from the
// calibration batch.
std::map<std::string, std::map<std::pair<char, std::size_t>, double>> g_per_iteration;

// A rough guess before anything is measured (a round trip for tag_lat).
double guess(const std::string &tls, char kind, std::size_t size) {
  const double bytes = static_cast<double>(size);
  const bool tcp = tls == "tcp";
  if (kind == 'L') return tcp ? 60e-6 + 2 * bytes / 0.5e9 : 2e-6 + 2 * bytes / 2e9;
  return tcp ? 2e-6 + bytes / 0.5e9 : 0.5e-6 + bytes / 3e9;
}

long clamp_count(double n) {
  return static_cast<long>(std::clamp(n, 4.0, 50e6));
}

// A TCP port on 127.0.0.1 that nothing listens on now.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// Whether a socket listens on `port` (/proc/net/tcp, tcp6: state 0A).
bool listening(int port) {
  char local[16];
  std::snprintf(local, sizeof local, ":%04X ", port);
  for (const char *table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    while (std::getline(in, line)) {
      // sl local_address rem_address st ...
      std::istringstream fields(line);
      std::string sl, address, remote, state;
      fields >> sl >> address >> remote >> state;
      if (state == "0A" && (address + " ").find(local) != std::string::npos) return true;
    }
  }
  return false;
}

std::vector<std::string> pinned(const Programs &p, int cpu_index) {
  const std::string taskset = find_program("taskset");
  if (taskset.empty() || p.cpus.size() < 2) return {};
  return {taskset, "-c", std::to_string(p.cpus[static_cast<std::size_t>(cpu_index)])};
}

// Runs one batch; on success `lines` holds the client's result lines.
std::string run_batch(const RunRequest &r, const std::string &tls,
                      const std::vector<BatchLine> &batch, const std::string &suffix,
                      std::vector<UcxLine> &lines) {
  const std::string batch_file = r.scratch + suffix + ".batch";
  {
    std::ofstream out(batch_file);
    for (const auto &b : batch) {
      out << b.label() << " -t " << (b.kind == 'L' ? "tag_lat" : "tag_bw") << " -s " << b.size
          << " -n " << b.n << " -w " << b.warmup << "\n";
    }
    if (!out) return "cannot write " + batch_file;
  }
  const int port = free_port();
  if (port == 0) return "no free TCP port on 127.0.0.1 for ucx_perftest";
  std::vector<std::pair<std::string, std::string>> env = {{"UCX_TLS", tls}};
  if (tls == "tcp") env.emplace_back("UCX_NET_DEVICES", "lo");
  const Programs &p = r.programs;
  double planned = 0;
  for (const auto &b : batch) planned += r.options.seconds * (b.n > 0 ? 1.2 : 0);
  const double limit = 60 + 10 * planned;

  Invocation server{pinned(p, 1), env, r.log + suffix + ".server", limit + 30};
  for (const std::string &a : {p.ucx_perftest.path, std::string("-p"), std::to_string(port),
                               std::string("-b"), batch_file}) {
    server.argv.push_back(a);
  }
  ChildProcess server_process;
  if (!server_process.start(server)) return "server: " + server_process.result().error;
  // The client must not connect before the server listens (its "Waiting for
  // connection" line may sit in its stdout buffer: the kernel's table says).
  const double deadline = monotonic_seconds() + 20;
  while (!listening(port)) {
    if (server_process.exited()) {
      return "the server ended: " + server_process.result().describe() + ": " +
             failure_line(read_file(server.log));
    }
    if (monotonic_seconds() > deadline || interrupted())
      return "the server did not start listening";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  Invocation client{pinned(p, 0), env, r.log + suffix, limit};
  for (const std::string &a :
       {p.ucx_perftest.path, std::string("127.0.0.1"), std::string("-p"), std::to_string(port),
        std::string("-b"), batch_file, std::string("-f"), std::string("-v")}) {
    client.argv.push_back(a);
  }
  const ChildResult c = run_child(client);
  if (!c.ok()) {
    return "client: " + c.describe() + ": " + failure_line(read_file(client.log));
  }
  // The server ends after the batch; one that does not is stopped when
  // server_process goes.
  for (int i = 0; i < 500 && !server_process.exited(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  lines = parse_ucx_perftest(read_file(client.log));
  if (lines.size() != batch.size()) {
    return "the client printed " + std::to_string(lines.size()) + " of " +
           std::to_string(batch.size()) + " results: " + failure_line(read_file(client.log));
  }
  return "";
}

const UcxLine *find_line(const std::vector<UcxLine> &lines, const std::string &label) {
  for (const auto &l : lines) {
    if (l.label == label) return &l;
  }
  return nullptr;
}

// Seconds one iteration of a line took.
double per_iteration(const BatchLine &b, const UcxLine &l) {
  return b.kind == 'L' ? 2 * l.latency_us * 1e-6 : (l.rate > 0 ? 1 / l.rate : 0);
}

std::string calibrate(const RunRequest &r, const std::string &system, const std::string &tls) {
  std::vector<BatchLine> batch;
  for (char kind : {'L', 'B'}) {
    for (std::size_t size : r.options.sizes) {
      const long n = clamp_count(r.options.seconds / 10 / guess(tls, kind, size));
      batch.push_back({kind, size, 0, n, std::max(1L, n / 10)});
    }
  }
  std::vector<UcxLine> lines;
  const std::string why = run_batch(r, tls, batch, ".calibration", lines);
  if (!why.empty()) return "calibration: " + why;
  auto &table = g_per_iteration[system];
  for (const auto &b : batch) {
    const UcxLine *l = find_line(lines, b.label());
    const double t = l != nullptr ? per_iteration(b, *l) : 0;
    table[{b.kind, b.size}] = t > 0 ? t : guess(tls, b.kind, b.size);
  }
  return "";
}

}  // namespace

RunOutcome run_ucx_perftest(const RunRequest &r, const std::string &system,
                            const std::string &tls) {
  RunOutcome outcome;
  const CompareOptions &o = r.options;
  if (g_per_iteration.count(system) == 0) {
    outcome.why = calibrate(r, system, tls);
    if (!outcome.why.empty()) return outcome;
  }
  std::vector<BatchLine> batch;
  const auto &table = g_per_iteration[system];
  for (char kind : {'L', 'B'}) {
    for (std::size_t size : o.sizes) {
      const long n = clamp_count(o.seconds / table.at({kind, size}));
      for (int rep = 0; rep < o.reps; ++rep) {
        batch.push_back({kind, size, rep, n, rep == 0 ? std::max(1L, n / 10) : 1});
      }
    }
  }
  std::vector<UcxLine> lines;
  outcome.why = run_batch(r, tls, batch, "", lines);
  if (!outcome.why.empty()) return outcome;
  for (std::size_t size : o.sizes) {
    std::vector<double> latency, gbs, rate;
    for (int rep = 0; rep < o.reps; ++rep) {
      const UcxLine *l = find_line(lines, BatchLine{'L', size, rep, 0, 0}.label());
      const UcxLine *b = find_line(lines, BatchLine{'B', size, rep, 0, 0}.label());
      if (l == nullptr || b == nullptr) {
        outcome.why = "no result for " + format_size(size) + " (see " + r.log + ")";
        return outcome;
      }
      latency.push_back(l->latency_us);
      gbs.push_back(b->bandwidth_mib * 1048576.0 / 1e9);
      rate.push_back(b->rate / 1e6);
    }
    const Row lat = summarize("latency", size, 1, latency, "us");
    const Row bw = summarize("bandwidth", size, 1, gbs, "GB/s");
    const Row mr = summarize("rate", size, 1, rate, "M msg/s");
    for (const Row *row : {&lat, &bw, &mr}) {
      outcome.samples.push_back(
          {row->benchmark, system, size, 1, r.round, row->median, row->min, row->max, row->unit});
    }
  }
  outcome.ok = true;
  return outcome;
}

}  // namespace rocl_bench::compare
