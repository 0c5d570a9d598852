// util.cpp - rocl-demo's helpers: formatting, errors, receives with a
// timeout, and what rocl.h tells of the options and transports in force.
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "demo.hpp"

namespace demo {

namespace {
std::string g_process_label;  // set once by main before any thread starts
}

void set_process_label(std::string label) {
  g_process_label = std::move(label);
}

[[noreturn]] void fail(const std::string &who, const std::string &why) {
  std::fflush(stdout);
  std::fprintf(stderr, "rocl-demo: error in %s%s%s: %s\n", who.c_str(),
               g_process_label.empty() ? "" : " of ", g_process_label.c_str(), why.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

[[noreturn]] void fail(const std::string &who, const rocl::Error &e) {
  fail(who, std::string(e.what()) + " (" + rocl_strerror(e.code()) + ")");
}

rocl::Message receive(rocl::Resource &me, rocl::gid_t from, int tag,
                      std::chrono::milliseconds timeout, const std::string &who,
                      const std::string &what) {
  std::optional<rocl::Message> m = me.recv(from, tag, timeout);
  if (!m) {
    fail(who, "no " + what + " (gid " + hex(from) + ") within " +
                  std::to_string(timeout.count() / 1000) + " s");
  }
  return std::move(*m);
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string hex(rocl::gid_t gid) {
  char text[32];
  std::snprintf(text, sizeof text, "%#llx", static_cast<unsigned long long>(gid));
  return text;
}

std::string number(double v) {
  char text[64];
  // Thresholds just below 100, 10, 1 so that 9.996 prints as "10.0", not "10.00".
  const char *format = v >= 99.95 ? "%.0f" : v >= 9.995 ? "%.1f" : v >= 0.9995 ? "%.2f" : "%.3f";
  std::snprintf(text, sizeof text, format, v);
  return text;
}

std::string per_second(double v) {
  if (v >= 1e6) return number(v / 1e6) + " M";
  if (v >= 1e3) return number(v / 1e3) + " k";
  return number(v);
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

std::string size_text(std::size_t bytes) {
  if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes / 1024) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string option_in_force(const char *name) {
  char *text = nullptr;
  std::size_t len = 0;
  std::FILE *f = open_memstream(&text, &len);
  if (f == nullptr) return "";
  rocl_print_options(f);
  std::fclose(f);
  const std::string all(text, len);
  std::free(text);
  // Lines "NAME=value  (default)" or "NAME=value  (environment)".
  const std::string key = std::string(name) + "=";
  for (std::size_t pos = 0; pos < all.size();) {
    std::size_t end = all.find('\n', pos);
    if (end == std::string::npos) end = all.size();
    const std::string_view line(all.data() + pos, end - pos);
    if (line.starts_with(key)) {
      const std::string_view value = line.substr(key.size());
      return std::string(value.substr(0, value.find("  (")));
    }
    pos = end + 1;
  }
  return "";
}

namespace {
std::vector<std::string> split(const std::string &list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    if (comma > start) out.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}
}  // namespace

std::string enabled_transports() {
  // rocl.h lists no transports: ask the context resource for the address
  // of each one it may have enabled, in ROCL_TRANSPORTS's order.
  std::string wanted = option_in_force("ROCL_TRANSPORTS");
  if (wanted.empty() || wanted == "auto") wanted = "inproc,shm,tcp,ucx,udp";
  std::string out;
  for (const std::string &name : split(wanted)) {
    const std::string attr = "addr." + name;
    // A query by gid: the context's own attributes.
    auto list = rocl::Attributes{}.ask(attr, 256).to_c();
    rocl::gid_t gid = rocl_context_gid();
    if (rocl_query(&gid, list.get()) != ROCL_OK) continue;
    if (rocl_get_attr(list.get(), attr.c_str(), nullptr) == nullptr) continue;
    out += (out.empty() ? "" : ",") + name;
  }
  return out;
}

std::string transport_between(const Job &job) {
  if (job.size() < 2) return "";
  const auto mine = split(job.processes()[0].transports);
  const auto theirs = split(job.processes()[1].transports);
  for (const std::string &t : mine) {
    if (t == "inproc") continue;
    for (const std::string &u : theirs) {
      if (t == u) return t;
    }
  }
  return "";
}

int usable_cpus() {
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof cpus, &cpus) != 0) return 1;
  return CPU_COUNT(&cpus);
}

double memcpy_gb_per_s() {
  std::vector<char> from(kMiB, 'a'), to(kMiB);
  long n = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  do {
    for (int k = 0; k < 16; ++k, ++n) {
      from[static_cast<std::size_t>(n) % kMiB] = static_cast<char>(n);
      std::memcpy(to.data(), from.data(), kMiB);
    }
  } while ((elapsed = seconds_since(start)) < 0.1);
  if (to[0] == 0x7f) std::printf(" ");  // keep the copies
  return static_cast<double>(n) * static_cast<double>(kMiB) / elapsed / 1e9;
}

}  // namespace demo
