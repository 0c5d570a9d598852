// rocl-dir - asks the node directory server (rocld) from the shell.
//
//   rocl-dir [--socket PATH] [--secret-file PATH] query name=value... [--ask name...]
//   rocl-dir [--socket PATH] [--secret-file PATH] list [--ask name...]
//
// Prints one line per matching resource, in increasing gid order:
//   gid 0x0001000000000002 type=worker name=w-1 context=0x0001000000000001
// A query fills only the attributes it names, so the line shows the
// pattern's attributes plus the asked ones the resource has: by default
// type, name and context, and any given with --ask. Exit 0 (also when
// nothing matches), 1 with the error sentence on failure, 2 on bad usage.
// --socket / --secret-file default to $ROCL_DIRECTORY (else
// /tmp/rocl-<uid>/dir.sock) and $ROCL_SECRET_FILE.
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "directory/remote_directory.hpp"
#include "security/job_secret.hpp"
#include "status/status.hpp"

namespace {

constexpr std::size_t kAnswerBytes = 1024;  // room for each asked attribute's value

int usage(const char *why) {
  std::fprintf(stderr,
               "rocl-dir: %s\n"
               "usage: rocl-dir [--socket PATH] [--secret-file PATH] query name=value... "
               "[--ask name...]\n"
               "       rocl-dir [--socket PATH] [--secret-file PATH] list [--ask name...]\n",
               why);
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
      usage("lists and queries the node directory");
      return 0;
    }
    if ((a == "--socket" || a == "--secret-file") && command.empty()) {
      if (i + 1 >= argc) {
        return usage(("missing value after " + a).c_str());
      }
      (a == "--socket" ? socket_path : secret_file) = argv[++i];
    } else if (command.empty()) {
      if (a != "query" && a != "list") {
        return usage(("unknown command '" + a + "'").c_str());
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
      return usage(("unexpected argument '" + a + "'").c_str());
    }
  }
  if (command.empty()) {
    return usage("no command");
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
  for (;;) {
    const std::int64_t gid = cursor->next(answers);
    if (gid == ROCL_EEND) {
      break;
    }
    if (gid < 0) {
      return failed(rocl::impl::last_error());
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
  return 0;
}
