// Uses the installed C++ API: one message between two resources.
#include <rocl/rocl.hpp>

#include <cstdio>

int main() {
  rocl::Context ctx;
  rocl::Resource a({{"type", "consumer-a"}});
  rocl::Resource b({{"type", "consumer-b"}});
  auto found = rocl::query({{"type", "consumer-b"}});
  if (!found || found->gid != b.gid()) return 1;
  a.send(found->gid, 7, std::string_view("installed"));
  auto m = b.recv(a.gid(), 7, std::chrono::milliseconds(1000));
  if (!m || m->buffer.view() != "installed") return 2;
  std::puts("consumer_cpp: ok");
  return 0;
}
