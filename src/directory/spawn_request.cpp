// spawn_request.cpp - the body of a spawn request (spawn_request.hpp).
#include "directory/spawn_request.hpp"

#include <cstring>
#include <string_view>

#include "status/status.hpp"

extern char **environ;

namespace rocl::impl {
namespace {

constexpr const char *kJobVariables[] = {
    "ROCL_RANK",      "ROCL_SIZE",     "ROCL_JOB_DIR", "ROCL_SECRET_FILE", "ROCL_DIRECTORY",
    "ROCL_HOST_NAME", "ROCL_SPAWN_ID", "ROCL_PARENT",  "ROCL_LOCAL_RANK",  "ROCL_TCP_BIND"};

std::string joined(const std::vector<std::string> &parts) {
  std::string s;
  for (const std::string &p : parts) {
    s += p;
    s.push_back('\0');
  }
  return s;
}

// Splits NUL-terminated strings; false if the value does not end in NUL.
bool split(const std::byte *value, std::size_t len, std::vector<std::string> *out) {
  const char *p = reinterpret_cast<const char *>(value);
  if (len == 0) return true;
  if (p[len - 1] != '\0') return false;
  for (std::size_t at = 0; at < len;) {
    const std::size_t n = std::strlen(p + at);
    out->emplace_back(p + at, n);
    at += n + 1;
  }
  return true;
}

bool option_name(std::string_view key) {
  if (key.size() <= 5 || key.substr(0, 5) != "ROCL_") return false;
  for (char c : key) {
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// Why env entry e breaks the rules, or "" if it does not.
std::string bad_env(const std::string &e) {
  const std::size_t eq = e.find('=');
  if (eq == std::string::npos) return "'" + e + "' has no '='";
  if (!option_name(std::string_view(e).substr(0, eq))) {
    return "'" + e.substr(0, eq) + "' is not a ROCL_ option name";
  }
  return "";
}

}  // namespace

bool is_job_variable(const std::string &key) {
  for (const char *v : kJobVariables) {
    if (key == v) return true;
  }
  return false;
}

std::vector<std::string> spawn_options_of_environment() {
  std::vector<std::string> out;
  for (char **e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos || !option_name(std::string_view(entry).substr(0, eq))) continue;
    if (is_job_variable(entry.substr(0, eq))) continue;
    out.push_back(entry);
  }
  return out;
}

int encode_spawn_request(const SpawnRequest &r, AttrList *out) {
  if (r.argv.empty() || r.argv[0].empty()) {
    return fail(ROCL_EINVAL, "rocl_spawn: no program to run (argv[0] is NULL or empty)");
  }
  if (r.argv.size() > SpawnRequest::kMaxArgs) {
    return fail(ROCL_EINVAL, "rocl_spawn: %zu arguments, at most %zu", r.argv.size(),
                SpawnRequest::kMaxArgs);
  }
  for (const std::string &e : r.env) {
    if (const std::string why = bad_env(e); !why.empty()) {
      return fail(ROCL_EINVAL, "rocl_spawn: environment entry %s", why.c_str());
    }
  }
  const std::string args = joined(r.argv);
  const std::string env = joined(r.env);
  std::byte parent[8];
  for (int i = 0; i < 8; ++i) parent[i] = static_cast<std::byte>(r.parent >> (8 * i));
  AttrList list(static_cast<int>(SpawnRequest::kMaxRequestBytes - AttrList::kHeaderBytes -
                                 3 * AttrList::kEntryHeaderBytes));
  if (list.add("argv", args) != ROCL_OK || list.add("env", env) != ROCL_OK ||
      list.add("parent", std::span<const std::byte>(parent)) != ROCL_OK ||
      list.bytes().size() > SpawnRequest::kMaxRequestBytes) {
    return fail(ROCL_ENOSPC,
                "rocl_spawn: the program's arguments and options take %zu bytes, more than a "
                "spawn request holds (%zu)",
                args.size() + env.size(), SpawnRequest::kMaxRequestBytes - 256);
  }
  *out = std::move(list);
  return ROCL_OK;
}

int decode_spawn_request(const AttrList &list, SpawnRequest *out, std::string *what) {
  if (list.bytes().size() > SpawnRequest::kMaxRequestBytes) {
    *what = "a spawn request of " + std::to_string(list.bytes().size()) + " bytes (at most " +
            std::to_string(SpawnRequest::kMaxRequestBytes) + ")";
    return ROCL_EINVAL;
  }
  SpawnRequest r;
  bool has_argv = false, has_env = false, has_parent = false;
  for (const AttrList::Attr &a : list) {
    if (!a.specified()) {
      *what = "a spawn request whose attribute '" + std::string(a.name) + "' has no value";
      return ROCL_EINVAL;
    }
    if (a.name == "argv" && !has_argv) {
      has_argv = true;
      if (!split(a.value, a.len, &r.argv)) {
        *what = "a spawn request whose argv does not end in a NUL byte";
        return ROCL_EINVAL;
      }
    } else if (a.name == "env" && !has_env) {
      has_env = true;
      if (!split(a.value, a.len, &r.env)) {
        *what = "a spawn request whose env does not end in a NUL byte";
        return ROCL_EINVAL;
      }
    } else if (a.name == "parent" && !has_parent && a.len == 8) {
      has_parent = true;
      for (int i = 0; i < 8; ++i) {
        r.parent |= static_cast<rocl_gid_t>(static_cast<std::uint8_t>(a.value[i])) << (8 * i);
      }
    } else {
      *what = "a spawn request with an unexpected attribute '" + std::string(a.name) + "' (" +
              std::to_string(a.len) + " bytes)";
      return ROCL_EINVAL;
    }
  }
  if (!has_argv || !has_env || !has_parent) {
    *what = "a spawn request without its argv, env and parent";
    return ROCL_EINVAL;
  }
  if (r.argv.empty() || r.argv[0].empty() || r.argv.size() > SpawnRequest::kMaxArgs) {
    *what = "a spawn request with " + std::to_string(r.argv.size()) +
            " arguments or an empty program name";
    return ROCL_EINVAL;
  }
  for (const std::string &e : r.env) {
    if (const std::string why = bad_env(e); !why.empty()) {
      *what = "a spawn request whose environment entry " + why;
      return ROCL_EINVAL;
    }
  }
  *out = std::move(r);
  return ROCL_OK;
}

}  // namespace rocl::impl
