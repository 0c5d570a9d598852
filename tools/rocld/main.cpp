// rocld - the node directory server in the foreground until SIGINT/SIGTERM.
//
//   rocld [--socket PATH] [--secret-file PATH] [--server-id N] [--listen [HOST:]PORT]
//         [--peer-port PORT [--peer ADDRESS[:PORT]]... [--bind NAME]] [--spawn]
//
// Defaults: the socket from ROCL_DIRECTORY, else /tmp/rocl-<uid>/dir.sock
// (the folder is made 0700 if missing); the secret from ROCL_SECRET_FILE.
// Without a secret it refuses to start.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "directory/directory_server.hpp"
#include "os/host.hpp"
#include "os/net.hpp"
#include "security/job_secret.hpp"
#include "status/status.hpp"

namespace {

const char kUsage[] =
    "usage: rocld [--socket PATH] [--secret-file PATH] [--server-id N]\n"
    "             [--listen [HOST:]PORT] [--spin-us N]\n"
    "             [--peer-port PORT [--peer ADDRESS[:PORT]]... [--bind NAME]]\n"
    "             [--spawn]\n"
    "The node directory server, in the foreground until SIGINT or SIGTERM.\n"
    "  --socket PATH       default $ROCL_DIRECTORY, else /tmp/rocl-<uid>/dir.sock\n"
    "  --secret-file PATH  the job secret (64 hex digits, mode 0600);\n"
    "                      default $ROCL_SECRET_FILE\n"
    "  --server-id N       the gid range to issue, 1..32767 (default 1; with\n"
    "                      --peer-port, the low 15 bits of the host network's\n"
    "                      IPv4 address, unique within a /17 or smaller subnet)\n"
    "  --peer-port PORT    join the job's other directory servers over UDP on this\n"
    "                      port (the same on every host): global queries\n"
    "  --peer ADDR[:PORT]  also reach this server by unicast (repeatable)\n"
    "  --bind NAME         the host network: address, interface or auto (default)\n"
    "  --gid-bits 63|31    the gids' width (default $ROCL_GID_BITS, else 63); 31:\n"
    "                      gids that fit a C int (rocl/rocl_paper.h), ids 1..127\n"
    "  --listen [HOST:]PORT  also serve over tcp (ROCL_DIRECTORY=tcp:HOST:PORT);\n"
    "                      HOST an address, an interface, auto or any (default)\n"
    "  --spin-us N         after a request, look for the next one this long before\n"
    "                      sleeping (default 50; 0: sleep at once)\n"
    "  --spawn             start programs for rocl_spawn (anyone with the secret\n"
    "                      may then run programs here as this user); the host is\n"
    "                      then the resource {type=rocl-host, host=$ROCL_HOST_NAME\n"
    "                      or the system's name}\n"
    "  --help              this text\n";

// A mistake on the command line: one line naming it, exit status 2.
int usage_error(const std::string &why) {
  std::fprintf(stderr, "rocld: %s (see rocld --help)\n", why.c_str());
  return 2;
}

bool parse_long(const char *s, long lo, long hi, long *out) {
  char *end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

std::string default_socket() {
  if (const char *env = std::getenv("ROCL_DIRECTORY"); env != nullptr && *env != '\0') {
    std::string address = env;  // unix:PATH, or a bare path
    return address.rfind("unix:", 0) == 0 ? address.substr(5) : address;
  }
  return "/tmp/rocl-" + std::to_string(getuid()) + "/dir.sock";
}

// Makes the socket's folder (0700) if it is the default one and missing.
bool ensure_folder(const std::string &path) {
  const std::string folder = path.substr(0, path.rfind('/'));
  if (folder.empty()) {
    return true;
  }
  struct stat st;
  if (stat(folder.c_str(), &st) == 0) {
    return true;
  }
  if (mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "rocld: cannot create %s: %s\n", folder.c_str(), std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  std::string socket_path;
  std::string secret_file;
  long server_id = 0;
  long spin_us = rocl::impl::DirectoryServer::kDefaultSpin.count();
  std::string listen;
  const char *env_bits = std::getenv("ROCL_GID_BITS");
  std::string gid_bits = env_bits != nullptr ? env_bits : "";
  rocl::impl::PeerConfig peers;
  bool federate = false;
  bool spawn = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--spawn") {
      spawn = true;
      continue;
    }
    static const char *const kWithValue[] = {"--socket",    "--secret-file", "--listen",
                                             "--peer-port", "--peer",        "--bind",
                                             "--gid-bits",  "--spin-us",     "--server-id"};
    bool takes_value = false;
    for (const char *o : kWithValue) takes_value = takes_value || a == o;
    if (!takes_value) {
      return usage_error(a.rfind('-', 0) == 0 ? "unknown option '" + a + "'"
                                              : "unexpected argument '" + a + "'");
    }
    if (i + 1 >= argc) return usage_error(a + " needs a value");
    const char *value = argv[++i];
    if (a == "--socket") {
      socket_path = value;
    } else if (a == "--secret-file") {
      secret_file = value;
    } else if (a == "--listen") {
      listen = value;
    } else if (a == "--peer-port") {
      long port = 0;
      if (!parse_long(value, 1, 65535, &port)) {
        return usage_error("--peer-port takes a port from 1 to 65535, not '" + std::string(value) +
                           "'");
      }
      peers.port = static_cast<std::uint16_t>(port);
      federate = true;
    } else if (a == "--peer") {
      peers.peers.emplace_back(value);
    } else if (a == "--bind") {
      peers.bind = value;
    } else if (a == "--gid-bits") {
      gid_bits = value;
    } else if (a == "--spin-us") {
      if (!parse_long(value, 0, 1000000, &spin_us)) {
        return usage_error("--spin-us takes microseconds from 0 to 1000000, not '" +
                           std::string(value) + "'");
      }
    } else if (!parse_long(value, 1, rocl::impl::kMaxServerId, &server_id)) {  // --server-id
      return usage_error("--server-id takes a number from 1 to 32767, not '" + std::string(value) +
                         "'");
    }
  }
  if (!federate && !peers.peers.empty()) return usage_error("--peer needs --peer-port");
  rocl::impl::GidWidth width = rocl::impl::GidWidth::kWide;
  if (!rocl::impl::parse_gid_bits(gid_bits.c_str(), &width)) {
    return usage_error("--gid-bits (ROCL_GID_BITS) takes 63 or 31, not '" + gid_bits + "'");
  }
  if (server_id > rocl::impl::max_server_id(width)) {
    return usage_error("--server-id takes a number from 1 to 127 with 31-bit gids");
  }
  if (socket_path.empty()) {
    socket_path = default_socket();
  }
  if (secret_file.empty()) {
    if (const char *env = std::getenv("ROCL_SECRET_FILE"); env != nullptr) {
      secret_file = env;
    }
  }
  if (secret_file.empty()) {
    std::fprintf(stderr,
                 "rocld: no job secret: give --secret-file PATH or set ROCL_SECRET_FILE; "
                 "refusing to serve a directory anyone could use\n");
    return 1;
  }
  rocl::impl::JobSecret secret;
  if (rocl::impl::JobSecret::read_file(secret_file, &secret) != ROCL_OK) {
    std::fprintf(stderr, "rocld: %s\n", rocl::impl::last_error());
    return 1;
  }
  if (!ensure_folder(socket_path)) {
    return 1;
  }
  // Block the stop signals before the server thread starts: only sigwait sees them.
  sigset_t stop_set;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGINT);
  sigaddset(&stop_set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_set, nullptr);

  if (server_id == 0) {
    server_id = 1;
    in_addr host{};
    if (federate) {
      if (!rocl::impl::os::resolve_ipv4(peers.bind, &host) ||
          host.s_addr == htonl(INADDR_LOOPBACK)) {
        std::fprintf(stderr,
                     "rocld: --bind %s gives no host network address to take a server id from; "
                     "give --server-id\n",
                     peers.bind.c_str());
        return 1;
      }
      server_id = static_cast<long>(ntohl(host.s_addr) & rocl::impl::max_server_id(width));
      if (server_id == 0) {
        std::fprintf(stderr, "rocld: the host address %s ends in 15 zero bits; give --server-id\n",
                     rocl::impl::os::ipv4_text(host).c_str());
        return 1;
      }
    }
  }
  rocl::impl::DirectoryServer server(socket_path, secret, static_cast<std::uint16_t>(server_id));
  server.set_gid_width(width);
  server.set_spin(std::chrono::microseconds(spin_us));
  if (!listen.empty()) server.listen_tcp(listen);
  if (federate) server.set_peers(peers);
  if (spawn) {
    rocl::impl::SpawnConfig config;
    const char *name = std::getenv("ROCL_HOST_NAME");
    config.host_name = name != nullptr && *name != '\0' ? name : rocl::impl::os::host_name();
    config.environment = {"ROCL_DIRECTORY=unix:" + socket_path, "ROCL_SECRET_FILE=" + secret_file,
                          "ROCL_HOST_NAME=" + config.host_name};
    if (federate) config.environment.push_back("ROCL_TCP_BIND=auto");
    server.enable_spawn(std::move(config));
  }
  if (server.start() != ROCL_OK) {
    std::fprintf(stderr, "rocld: %s\n", rocl::impl::last_error());
    return 1;
  }
  std::string tcp;
  if (server.tcp_port() != 0) {
    tcp = " and tcp:" + server.tcp_ip() + ":" + std::to_string(server.tcp_port());
  }
  std::fprintf(stderr, "rocld: serving the directory on %s%s (server id %ld, pid %ld)\n",
               socket_path.c_str(), tcp.c_str(), server_id, static_cast<long>(getpid()));
  int sig = 0;
  sigwait(&stop_set, &sig);
  std::fprintf(stderr, "rocld: %s: stopping (%zu resources registered)\n", strsignal(sig),
               server.resources());
  server.stop();
  return 0;
}
