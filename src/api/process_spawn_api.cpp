// process_spawn_api.cpp - rocl_spawn, rocl_spawn_at and rocl_parent
// (rocl.h): processes started on a host of the job through that host's
// directory server (spawn_table.hpp), as ToCL's remote process creation
// and PVM's pvm_spawn through its daemon.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "directory/remote_directory.hpp"
#include "directory/spawn_request.hpp"
#include "rocl/rocl.h"
#include "status/status.hpp"

namespace {

using rocl::impl::AttrList;
using rocl::impl::Context;
using rocl::impl::Directory;
using rocl::impl::fail;

// A connection of this thread's own to the node's directory server: a
// spawn waits there for as long as the program takes to start, and the
// process's other threads keep using the shared one meanwhile.
struct SpawnConnection {
  rocl_gid_t context = ROCL_NULL_GID;
  std::unique_ptr<Directory> directory;
};
thread_local SpawnConnection t_connection;

Directory *spawn_directory(Context &ctx) {
  const std::string &address = ctx.options().directory;
  if (address.empty() || ctx.secret() == nullptr) return &ctx.directory();
  if (t_connection.context != ctx.gid() || !t_connection.directory) {
    t_connection.directory.reset();
    t_connection.directory = rocl::impl::connect_directory(address, *ctx.secret(), [](auto &) {});
    if (!t_connection.directory) return nullptr;
    t_connection.context = ctx.gid();
  }
  return t_connection.directory.get();
}

// The sentence of the last failure without a leading "rocl_spawn: ".
std::string reason() {
  std::string why = rocl::impl::last_error();
  if (why.rfind("rocl_spawn: ", 0) == 0) why.erase(0, 12);
  return why;
}

// The hosts that take spawns, {type=rocl-host} (name == nullptr: all;
// else the one so named), in gid order.
std::vector<rocl_gid_t> hosts(const char *name, std::vector<std::string> *names) {
  std::vector<rocl_gid_t> out;
  rocl_attrl_t *pattern = rocl_new_attrl(1024);
  rocl_add_attr(pattern, "type", "rocl-host", 9);
  if (name != nullptr) {
    rocl_add_attr(pattern, "host", name, static_cast<int>(std::strlen(name)));
  } else {
    rocl_add_attr(pattern, "host", nullptr, 256);  // an answer slot: each host's name
  }
  if (rocl_handler_t *h = rocl_query_start(pattern); h != nullptr) {
    for (std::int64_t g; (g = rocl_query_next(h, pattern)) > 0;) {
      out.push_back(static_cast<rocl_gid_t>(g));
      if (names != nullptr && name == nullptr) {
        int len = 0;
        const char *n = static_cast<const char *>(rocl_get_attr(pattern, "host", &len));
        names->emplace_back(n != nullptr ? std::string(n, static_cast<std::size_t>(len)) : "?");
      }
    }
    rocl_query_stop(h);
  }
  rocl_kill_attrl(pattern);
  return out;
}

std::atomic<unsigned> g_next_host{0};
std::once_flag g_first_host;

std::int64_t spawn_host(const char *host, const char *const argv[], const char *const env[],
                        int timeout_ms);

// rocl_spawn_at with the caller's extra environment entries (env, may be NULL).
std::int64_t spawn_at(rocl_gid_t where, const char *const argv[], const char *const env[],
                      int timeout_ms) {
  Context *ctx = Context::current();
  if (ctx == nullptr) return fail(ROCL_ENOINIT, "rocl_spawn: rocl_init has not been called");
  if (argv == nullptr || argv[0] == nullptr || argv[0][0] == '\0') {
    return fail(ROCL_EINVAL, "rocl_spawn: no program to run (argv or argv[0] is NULL or empty)");
  }
  if (where == ROCL_ANY_GID) return spawn_host(nullptr, argv, env, timeout_ms);
  rocl::impl::SpawnRequest request;
  for (const char *const *a = argv; *a != nullptr; ++a) {
    if (request.argv.size() == rocl::impl::SpawnRequest::kMaxArgs) {
      return fail(ROCL_EINVAL, "rocl_spawn: more than %zu arguments",
                  rocl::impl::SpawnRequest::kMaxArgs);
    }
    request.argv.emplace_back(*a);
  }
  request.env = rocl::impl::spawn_options_of_environment();
  for (const char *const *e = env; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('='));
    // A later entry with the same key wins (the server keeps the last).
    request.env.erase(std::remove_if(request.env.begin(), request.env.end(),
                                     [&key](const std::string &x) {
                                       return x.compare(0, key.size() + 1, key + "=") == 0;
                                     }),
                      request.env.end());
    request.env.push_back(entry);
  }
  request.parent = ctx->gid();
  AttrList encoded(1);
  if (const int rc = rocl::impl::encode_spawn_request(request, &encoded); rc != ROCL_OK) return rc;
  Directory *dir = spawn_directory(*ctx);
  if (dir == nullptr) return fail(ROCL_EPEER, "rocl_spawn: %s", reason().c_str());
  const std::int64_t gid = dir->spawn(where, encoded, timeout_ms);
  if (gid == ROCL_EPEER && std::strstr(rocl::impl::last_error(), "connection lost") != nullptr) {
    t_connection.directory.reset();  // the next spawn connects again
  }
  return gid;
}

std::int64_t spawn_host(const char *host, const char *const argv[], const char *const env[],
                        int timeout_ms) {
  Context *ctx = Context::current();
  if (ctx == nullptr) return fail(ROCL_ENOINIT, "rocl_spawn: rocl_init has not been called");
  if (argv == nullptr || argv[0] == nullptr || argv[0][0] == '\0') {
    return fail(ROCL_EINVAL, "rocl_spawn: no program to run (argv or argv[0] is NULL or empty)");
  }
  const bool any = host == nullptr || std::strcmp(host, "any") == 0;
  const std::vector<rocl_gid_t> found = hosts(any ? nullptr : host, nullptr);
  if (found.empty()) {
    if (any) {
      return fail(ROCL_ENOTFOUND,
                  "rocl_spawn: no host of this job takes spawns (no {type=rocl-host} resource: "
                  "run under roclrun, or start rocld with --spawn)");
    }
    std::vector<std::string> all;
    hosts(nullptr, &all);
    std::string list;
    for (const std::string &n : all) list += (list.empty() ? "" : ", ") + n;
    return fail(ROCL_ENOTFOUND, "rocl_spawn: no host named '%s' takes spawns in this job (%s%s)",
                host, all.empty() ? "none does" : "those that do: ", list.c_str());
  }
  // "any": the hosts in turn, each process starting at its own place so
  // that the ranks of a job spread their spawns.
  std::call_once(g_first_host, [] {
    const char *rank = std::getenv("ROCL_RANK");
    g_next_host.store(rank != nullptr ? static_cast<unsigned>(std::atoi(rank)) : 0);
  });
  const rocl_gid_t where = any ? found[g_next_host.fetch_add(1) % found.size()] : found.front();
  const std::int64_t gid = spawn_at(where, argv, env, timeout_ms);
  if (gid < 0 && !any) {
    const std::string why = reason();
    return fail(static_cast<int>(gid), "rocl_spawn on host %s: %s", host, why.c_str());
  }
  return gid;
}

}  // namespace

extern "C" {

int64_t rocl_spawn_at(rocl_gid_t where, const char *const argv[], int timeout_ms) {
  return spawn_at(where, argv, nullptr, timeout_ms);
}

int64_t rocl_spawn(const char *host, const char *const argv[], int timeout_ms) {
  return spawn_host(host, argv, nullptr, timeout_ms);
}

int64_t rocl_spawn_env(const char *host, const char *const argv[], const char *const env[],
                       int timeout_ms) {
  return spawn_host(host, argv, env, timeout_ms);
}

rocl_gid_t rocl_parent(void) {
  Context *ctx = Context::current();
  if (ctx == nullptr) {
    fail(ROCL_ENOINIT, "rocl_parent: rocl_init has not been called");
    return ROCL_NULL_GID;
  }
  return ctx->options().parent;
}

}  // extern "C"
