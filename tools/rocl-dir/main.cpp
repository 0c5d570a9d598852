// rocl-dir - asks the node directory server (rocld) from the shell.
//
//   rocl-dir [--socket PATH] [--secret-file PATH] query name=value... [--ask name...]
//   rocl-dir [--socket PATH] [--secret-file PATH] list [--ask name...]
//   rocl-dir [--socket PATH] [--secret-file PATH] job
//
// Prints one line per matching resource, in increasing gid order:
//   gid 0x0001000000000002 type=worker name=w-1 context=0x0001000000000001
// A query fills only the attributes it names, so the line shows the
// pattern's attributes plus the asked ones the resource has: by default
// type, name and context, and any given with --ask. Exit 0 (also when
// nothing matches), 1 with the error sentence on failure, 2 on bad usage.
// `job` shows the whole job as hosts, their processes (contexts: pid and
// gid) and each process's resources (gid, type, name).
// --socket / --secret-file default to $ROCL_DIRECTORY (else
// /tmp/rocl-<uid>/dir.sock) and $ROCL_SECRET_FILE.
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "directory/remote_directory.hpp"
#include "security/job_secret.hpp"
#include "status/status.hpp"

namespace {

constexpr std::size_t kAnswerBytes = 1024;  // room for each asked attribute's value

const char kUsage[] =
    "usage: rocl-dir [--socket PATH] [--secret-file PATH] query name=value... [--ask name...]\n"
    "       rocl-dir [--socket PATH] [--secret-file PATH] list [--ask name...]\n"
    "       rocl-dir [--socket PATH] [--secret-file PATH] job\n"
    "Asks the node directory server (rocld, or a job's roclrun).\n"
    "  query          the resources whose attributes match every name=value\n"
    "  list           every resource\n"
    "  job            the job as hosts, their processes and each one's resources\n"
    "  --ask name...  also show these attributes (default: type, name, context)\n"
    "  --socket PATH  default $ROCL_DIRECTORY, else /tmp/rocl-<uid>/dir.sock\n"
    "  --secret-file PATH  the job secret; default $ROCL_SECRET_FILE\n"
    "  --help         this text\n";

// A mistake on the command line: one line naming it, exit status 2.
int usage(const std::string &why) {
  std::fprintf(stderr, "rocl-dir: %s (see rocl-dir --help)\n", why.c_str());
  return 2;
}

int failed(const char *what) {
  std::fprintf(stderr, "rocl-dir: %s\n", what);
  return 1;
}

std::string show(std::string_view name, const std::byte *v, std::size_t len) {
  char buf[32];
  if (name == rocl::impl::kContextAttr && len == 8) {
    rocl_gid_t gid;
    std::memcpy(&gid, v, 8);
    std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(gid));
    return buf;
  }
  bool printable = true;
  for (std::size_t i = 0; i < len; ++i) {
    const auto c = static_cast<unsigned char>(v[i]);
    printable = printable && std::isprint(c) && c != ' ';
  }
  if (printable) {
    return std::string(reinterpret_cast<const char *>(v), len);
  }
  std::string hex = "0x";
  for (std::size_t i = 0; i < len; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned>(v[i]));
    hex += buf;
  }
  return hex;
}

// `rocl-dir job`: the job as ToCL's entities, hosts, their processes (a
// context each) and the processes' resources.
class Job {
 public:
  void take(rocl_gid_t gid, const rocl::impl::AttrList &a) {
    auto text = [&](const char *name) {
      std::size_t len = 0;
      const std::byte *v = a.get(name, &len);
      return v == nullptr ? std::string() : show(name, v, len);
    };
    rocl_gid_t context = 0;
    std::size_t len = 0;
    if (const std::byte *v = a.get(rocl::impl::kContextAttr, &len); v != nullptr && len == 8) {
      std::memcpy(&context, v, 8);
    }
    if (context == gid) {
      Process &p = processes_[gid];
      p.host = text("host");
      p.host_id = text("host.id");
      p.pid = text("pid");
      return;
    }
    std::string line = show("context", reinterpret_cast<const std::byte *>(&gid), 8);
    for (const char *n : {"type", "name"}) {
      const std::string v = text(n);
      if (!v.empty()) line += std::string(" ") + n + "=" + v;
    }
    processes_[context].resources.push_back(line);
  }

  void print() const {
    std::map<std::string, std::vector<std::pair<rocl_gid_t, const Process *>>> hosts;
    for (const auto &[gid, p] : processes_) {
      const std::string host = p.host.empty() ? "(no host: a context not listed)" : p.host;
      hosts[host + (p.host_id.empty() ? "" : " (host id " + p.host_id + ")")].emplace_back(gid, &p);
    }
    for (const auto &[host, processes] : hosts) {
      std::printf("host %s\n", host.c_str());
      for (const auto &[gid, p] : processes) {
        std::printf("  process %s (context %s)\n", p->pid.empty() ? "?" : p->pid.c_str(),
                    show("context", reinterpret_cast<const std::byte *>(&gid), 8).c_str());
        for (const std::string &r : p->resources) std::printf("    %s\n", r.c_str());
      }
    }
  }

 private:
  struct Process {
    std::string host, host_id, pid;
    std::vector<std::string> resources;
  };
  std::map<rocl_gid_t, Process> processes_;
};

}  // namespace

int main(int argc, char **argv) {
  using rocl::impl::AttrList;
  std::string socket_path;
  std::string secret_file;
  std::string command;
  std::vector<std::pair<std::string, std::string>> pattern;
  std::vector<std::string> ask = {"type", "name", "context"};
  bool asking = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if ((a == "--socket" || a == "--secret-file") && command.empty()) {
      if (i + 1 >= argc) {
        return usage(a + " needs a value");
      }
      (a == "--socket" ? socket_path : secret_file) = argv[++i];
    } else if (command.empty()) {
      if (a.rfind('-', 0) == 0) {
        return usage("unknown option '" + a + "' before the command");
      }
      if (a != "query" && a != "list" && a != "job") {
        return usage("unknown command '" + a + "' (query, list or job)");
      }
      command = a;
    } else if (a == "--ask") {
      asking = true;
    } else if (asking) {
      bool known = false;
      for (const auto &n : ask) {
        known = known || n == a;
      }
      if (!known) {
        ask.push_back(a);
      }
    } else if (command == "query" && a.find('=') != std::string::npos && a[0] != '=') {
      pattern.emplace_back(a.substr(0, a.find('=')), a.substr(a.find('=') + 1));
    } else {
      if (a.rfind('-', 0) == 0) return usage("unknown option '" + a + "'");
      if (command == "query") return usage("query takes name=value, not '" + a + "'");
      return usage("unexpected argument '" + a + "' after " + command);
    }
  }
  if (command.empty()) {
    return usage("no command: query, list or job");
  }
  if (command == "job") {
    ask = {"type", "name", "context", "host", "host.id", "pid"};
  }
  if (command == "query" && pattern.empty()) {
    return usage("query needs at least one name=value");
  }
  if (socket_path.empty()) {
    const char *env = std::getenv("ROCL_DIRECTORY");
    socket_path = env != nullptr && *env != '\0'
                      ? std::string(env)
                      : "/tmp/rocl-" + std::to_string(getuid()) + "/dir.sock";
  }
  if (secret_file.empty()) {
    const char *env = std::getenv("ROCL_SECRET_FILE");
    if (env == nullptr || *env == '\0') {
      return failed("no job secret: give --secret-file PATH or set ROCL_SECRET_FILE");
    }
    secret_file = env;
  }
  rocl::impl::JobSecret secret;
  if (rocl::impl::JobSecret::read_file(secret_file, &secret) != ROCL_OK) {
    return failed(rocl::impl::last_error());
  }

  // The pattern, and a list of answer slots (those not in the pattern).
  std::size_t budget = 64;
  for (const auto &[n, v] : pattern) {
    budget += 8 + n.size() + v.size();
  }
  AttrList query(static_cast<int>(budget));
  for (const auto &[n, v] : pattern) {
    if (query.add(n, std::string_view(v)) != ROCL_OK) {
      return failed(("bad attribute '" + n + "': " + rocl::impl::last_error()).c_str());
    }
  }
  AttrList answers(static_cast<int>(ask.size() * (8 + 256 + kAnswerBytes)));
  for (const auto &n : ask) {
    if (query.find(n)) {
      continue;
    }
    if (answers.add_unspecified(n, kAnswerBytes) != ROCL_OK) {
      return failed(("bad attribute name '" + n + "': " + rocl::impl::last_error()).c_str());
    }
  }

  auto dir = rocl::impl::connect_directory(socket_path, secret);
  if (!dir) {
    return failed(rocl::impl::last_error());
  }
  auto cursor = dir->query_start(query);
  if (!cursor) {
    return failed(rocl::impl::last_error());
  }
  Job job;
  for (;;) {
    const std::int64_t gid = cursor->next(answers);
    if (gid == ROCL_EEND) {
      break;
    }
    if (gid < 0) {
      return failed(rocl::impl::last_error());
    }
    if (command == "job") {
      job.take(static_cast<rocl_gid_t>(gid), answers);
      continue;
    }
    std::string line;
    char buf[40];
    std::snprintf(buf, sizeof buf, "gid 0x%016llx", static_cast<unsigned long long>(gid));
    line = buf;
    for (const AttrList::Attr &a : query) {
      line += " " + std::string(a.name) + "=" + show(a.name, a.value, a.len);
    }
    for (const AttrList::Attr &a : answers) {
      if (a.specified()) {
        line += " " + std::string(a.name) + "=" + show(a.name, a.value, a.len);
      }
    }
    std::printf("%s\n", line.c_str());
  }
  if (command == "job") job.print();
  return 0;
}
