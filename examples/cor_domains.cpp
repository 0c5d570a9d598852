// cor_domains.cpp - CoR domains (docs/api.md, "CoR domains"): the threads of
// every process join a domain "app" by local name, pass a token round a
// ring by index, and a library they call keeps its own traffic in a
// subdomain "app/sum", where the same tags never meet the application's.
//
//   cor_domains                     2 threads in this process
//   roclrun -n 2 cor_domains        2 threads in each of 2 processes
//
// Prints each thread's indices and the library's sum; exits 1 on a wrong
// sum or token.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "rocl/rocl.hpp"

namespace {

constexpr int kThreads = 2;
constexpr int kTag = 1;  // used by both the application and the library
constexpr auto kWait = std::chrono::seconds(20);

int env_int(const char *name, int otherwise) {
  const char *v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : otherwise;
}

// The library: every member casts its value in the library's own domain
// and adds up what the others cast.
long library_sum(rocl::Domain &lib, rocl::gid_t me, long value, int members) {
  lib.cast(me, kTag, std::string_view(std::to_string(value)));
  long sum = value;
  for (int i = 1; i < members; ++i)
    sum += std::stol(std::string(lib.recv(me, rocl::any_index, kTag)->buffer.view()));
  return sum;
}

void wait_for_size(rocl::Domain &d, int members) {
  while (d.size() < members) std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

int run_thread(rocl::Domain &app, rocl::Domain &lib, int rank, int t, int members) {
  rocl::Resource me({{"type", "cor-example"}});
  const std::string name = "worker-" + std::to_string(rank) + "." + std::to_string(t);
  const int index = app.join(me.gid(), name);
  lib.join(me.gid());
  wait_for_size(app, members);
  wait_for_size(lib, members);
  // The token goes round the ring of indices once, from index 0.
  if (index == 0) app.send(me.gid(), 1 % members, kTag, std::string_view("token"));
  auto token = app.recv(me.gid(), (index + members - 1) % members, kTag);
  if (index != 0) app.send(me.gid(), (index + 1) % members, kTag, token->buffer.view());
  const long sum = library_sum(lib, me.gid(), index + 1, members);
  const long want = static_cast<long>(members) * (members + 1) / 2;
  std::printf("%s: index %d in app, %d in app/sum; token from %d; sum %ld\n", name.c_str(), index,
              *lib.index_of(me.gid()), token->from_index, sum);
  // Leave once everyone is done with the domains (the creator deletes them).
  app.cast(me.gid(), kTag + 1, std::string_view("done"));
  for (int i = 1; i < members; ++i) app.recv(me.gid(), rocl::any_index, kTag + 1);
  app.leave(me.gid());
  lib.leave(me.gid());
  return token->buffer.view() == "token" && sum == want ? 0 : 1;
}

}  // namespace

int main() {
  try {
    rocl::Context ctx;
    const int rank = env_int("ROCL_RANK", 0), size = env_int("ROCL_SIZE", 1);
    const int members = kThreads * size;
    std::optional<rocl::Domain> app, lib;
    if (rank == 0) {
      app.emplace(rocl::Domain::create("app"));
      lib.emplace(rocl::Domain::create("sum", app->gid()));
    } else {
      app = rocl::Domain::find("app", ROCL_NULL_GID, kWait);
      if (app) lib = rocl::Domain::find("sum", app->gid(), kWait);
      if (!lib) {
        std::fprintf(stderr, "cor_domains: rank %d found no domain app/sum\n", rank);
        return 1;
      }
    }
    std::vector<int> failed(kThreads, 1);
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] { failed[t] = run_thread(*app, *lib, rank, t, members); });
    for (auto &th : threads) th.join();
    // The creator keeps the domains until every member has left.
    if (rank == 0) {
      while (app->size() > 0 || lib->size() > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    for (int f : failed) {
      if (f != 0) return 1;
    }
    return 0;
  } catch (const rocl::Error &e) {
    std::fprintf(stderr, "cor_domains: %s\n", e.what());
    return 1;
  }
}
