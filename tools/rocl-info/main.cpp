// rocl-info: the version, every option with its value in force, the
// transports this build has, and what rocl.h shows of a context: its gid,
// the transports it enabled (its "addr.<name>" attributes) and the buffer
// pool.
#include <cstdio>
#include <cstring>

#include "rocl/rocl.h"
#include "transport/transport.hpp"

namespace {

const char *reach_name(rocl::impl::Reach reach) {
  switch (reach) {
    case rocl::impl::Reach::kProcess:
      return "this process";
    case rocl::impl::Reach::kHost:
      return "this host";
    case rocl::impl::Reach::kNetwork:
      return "other hosts";
  }
  return "?";
}

void print_built_transports() {
  std::printf("\ntransports built (ROCL_TRANSPORTS, in default order):\n");
  for (const rocl::impl::TransportEntry *entry : rocl::impl::transport_table()) {
    std::printf("  %-8s reaches %-12s %s%s\n", entry->name, reach_name(entry->reach), entry->doc,
                entry->in_auto ? "" : " (only when named: not in ROCL_TRANSPORTS=auto)");
  }
}

// Each built transport's address attribute on the context resource.
void print_transports(rocl_gid_t context) {
  std::printf("transports enabled in this context:");
  for (const rocl::impl::TransportEntry *entry : rocl::impl::transport_table()) {
    const char *name = entry->name;
    char attr[32];
    std::snprintf(attr, sizeof attr, "addr.%s", name);
    rocl_attrl_t *query = rocl_new_attrl(0);
    if (query == nullptr ||
        rocl_add_attr(query, attr, nullptr, static_cast<int>(rocl::impl::kMaxAddressBytes)) !=
            ROCL_OK) {
      rocl_kill_attrl(query);
      continue;
    }
    rocl_gid_t gid = context;
    int len = 0;
    const void *addr = nullptr;
    if (rocl_query(&gid, query) == ROCL_OK) addr = rocl_get_attr(query, attr, &len);
    if (addr != nullptr) std::printf(" %s (%.*s)", name, len, static_cast<const char *>(addr));
    rocl_kill_attrl(query);
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char **argv) {
  if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::fputs(
        "usage: rocl-info\n"
        "Prints rocl's version, every option (ROCL_* environment variable) with its\n"
        "value in force and its doc, the transports built, and the context a\n"
        "rocl_init makes here: its gid, its transports and the buffer pool.\n",
        stdout);
    return 0;
  }
  if (argc > 1) {
    std::fprintf(stderr, "rocl-info: %s '%s' (it takes none; see rocl-info --help)\n",
                 argv[1][0] == '-' ? "unknown option" : "unexpected argument", argv[1]);
    return 2;
  }
  std::printf("rocl %s\n\noptions (ROCL_* environment variables):\n", ROCL_INFO_VERSION);
  std::fflush(stdout);
  rocl_print_options(stdout);
  print_built_transports();
  std::fflush(stdout);

  if (rocl_init() < 0) {
    std::fprintf(stderr, "rocl-info: rocl_init failed: %s\n", rocl_last_error());
    return 1;
  }
  const rocl_gid_t context = rocl_context_gid();
  std::printf("\ncontext gid: %#llx\n", static_cast<unsigned long long>(context));
  print_transports(context);
  rocl_pool_stats_t pool{};
  if (rocl_pool_stats(&pool) == ROCL_OK) {
    std::printf(
        "buffer pool: cap %zu MiB, reserved %zu KiB, in use %zu buffers (%zu B); "
        "buffer overhead %d B\n",
        pool.cap_bytes >> 20, pool.reserved_bytes >> 10, pool.in_use_buffers, pool.in_use_bytes,
        ROCL_BUFFER_OVERHEAD);
  } else {
    std::printf("buffer pool: %s\n", rocl_last_error());
  }
  rocl_exit();
  return 0;
}
