// hosts.cpp - a job's hosts and how to reach them (hosts.hpp).
#include "launch/hosts.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "status/status.hpp"

namespace rocl::impl {
namespace {

bool valid_name(const std::string &s) {
  if (s.empty() || s.size() > 255 || s[0] == '-') return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

// "name" or "name:N" -> out. False if malformed.
bool parse_entry(const std::string &entry, HostSlots *out) {
  const auto colon = entry.find(':');
  out->name = entry.substr(0, colon);
  out->slots = 0;
  if (colon != std::string::npos) {
    char *end = nullptr;
    const long n = std::strtol(entry.c_str() + colon + 1, &end, 10);
    if (colon + 1 == entry.size() || *end != '\0' || n < 1 || n > 4096) return false;
    out->slots = static_cast<int>(n);
  }
  return valid_name(out->name);
}

class Ssh final : public RemoteShell {
 public:
  Ssh() {
    const char *env = std::getenv("ROCL_SSH");
    std::istringstream words(env != nullptr && *env != '\0' ? env : "ssh");
    for (std::string w; words >> w;) prefix_.push_back(w);
    prefix_.insert(prefix_.begin() + 1, {"-o", "BatchMode=yes"});
  }
  std::vector<std::string> wrap(const std::string &host,
                                const std::vector<std::string> &argv) const override {
    std::vector<std::string> cmd = prefix_;
    cmd.push_back(host);
    cmd.push_back(shell_quote(argv));  // ssh joins its arguments into one command line
    return cmd;
  }
  bool same_machine() const override { return false; }

 private:
  std::vector<std::string> prefix_;
};

class Netns final : public RemoteShell {
 public:
  Netns() {
    const char *env = std::getenv("ROCL_NETNS_PREFIX");
    prefix_ = env != nullptr && *env != '\0' ? env : "rocl";
  }
  std::vector<std::string> wrap(const std::string &host,
                                const std::vector<std::string> &argv) const override {
    std::vector<std::string> cmd = {"ip", "netns", "exec", prefix_ + "-" + host};
    cmd.insert(cmd.end(), argv.begin(), argv.end());
    return cmd;
  }
  bool same_machine() const override { return true; }

 private:
  std::string prefix_;
};

class Local final : public RemoteShell {
 public:
  std::vector<std::string> wrap(const std::string &,
                                const std::vector<std::string> &argv) const override {
    return argv;
  }
  bool same_machine() const override { return true; }
};

}  // namespace

int parse_host_list(const std::string &list, std::vector<HostSlots> *out) {
  std::vector<HostSlots> hosts;
  std::size_t start = 0;
  while (start <= list.size()) {
    const auto comma = list.find(',', start);
    const std::string entry =
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    HostSlots h;
    if (!parse_entry(entry, &h)) {
      return fail(ROCL_EINVAL, "host list entry '%s' is not NAME or NAME:SLOTS", entry.c_str());
    }
    hosts.push_back(h);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  *out = std::move(hosts);
  return ROCL_OK;
}

int parse_hostfile(const std::string &path, std::vector<HostSlots> *out) {
  std::ifstream in(path);
  if (!in) return fail(ROCL_EINVAL, "host file %s cannot be read", path.c_str());
  std::vector<HostSlots> hosts;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string name, slots;
    if (!(words >> name)) continue;
    HostSlots h;
    bool ok = parse_entry(name, &h);
    if (ok && (words >> slots)) {
      ok = h.slots == 0 && slots.rfind("slots=", 0) == 0 &&
           parse_entry(h.name + ":" + slots.substr(6), &h);
      std::string more;
      ok = ok && !(words >> more);
    }
    if (!ok) {
      return fail(ROCL_EINVAL, "host file %s, line %d: '%s' is not NAME, NAME:N or NAME slots=N",
                  path.c_str(), number, line.c_str());
    }
    hosts.push_back(h);
  }
  if (hosts.empty()) return fail(ROCL_EINVAL, "host file %s names no host", path.c_str());
  *out = std::move(hosts);
  return ROCL_OK;
}

std::vector<int> place_ranks(const std::vector<HostSlots> &hosts, int n) {
  std::vector<int> where;
  if (hosts.empty() || n <= 0) return where;
  bool all_slots = true;
  for (const HostSlots &h : hosts) all_slots = all_slots && h.slots > 0;
  if (all_slots) {
    while (static_cast<int>(where.size()) < n) {
      for (std::size_t h = 0; h < hosts.size() && static_cast<int>(where.size()) < n; ++h) {
        for (int s = 0; s < hosts[h].slots && static_cast<int>(where.size()) < n; ++s) {
          where.push_back(static_cast<int>(h));
        }
      }
    }
    return where;
  }
  const int count = static_cast<int>(hosts.size());
  for (int r = 0; r < n; ++r) {
    // Blocks as even as they can be: the first n % count hosts take one more.
    const int base = n / count, extra = n % count;
    const int cut = extra * (base + 1);
    where.push_back(r < cut ? r / (base + 1) : extra + (r - cut) / std::max(base, 1));
  }
  return where;
}

std::unique_ptr<RemoteShell> make_remote_shell(const std::string &kind) {
  if (kind == "ssh") return std::make_unique<Ssh>();
  if (kind == "netns") return std::make_unique<Netns>();
  if (kind == "local") return std::make_unique<Local>();
  fail(ROCL_EINVAL, "--launcher takes ssh, netns or local, not '%s'", kind.c_str());
  return nullptr;
}

std::string shell_quote(const std::vector<std::string> &argv) {
  std::string out;
  for (const std::string &a : argv) {
    if (!out.empty()) out += ' ';
    out += '\'';
    for (char c : a) {
      if (c == '\'') {
        out += "'\\''";
      } else {
        out += c;
      }
    }
    out += '\'';
  }
  return out;
}

}  // namespace rocl::impl
