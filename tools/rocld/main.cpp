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

int usage(const char *why) {
  std::fprintf(stderr,
               "rocld: %s\n"
               "usage: rocld [--socket PATH] [--secret-file PATH] [--server-id N]\n"
               "             [--listen [HOST:]PORT] [--spin-us N]\n"
               "             [--peer-port PORT [--peer ADDRESS[:PORT]]... [--bind NAME]]\n"
               "             [--spawn]\n"
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
               "                      or the system's name}\n",
               why);
  return 2;
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
      usage("the node directory server");
      return 0;
    }
    if (a == "--spawn") {
      spawn = true;
      continue;
    }
    if (i + 1 >= argc) {
      return usage(("missing value after " + a).c_str());
    }
    if (a == "--socket") {
      socket_path = argv[++i];
    } else if (a == "--secret-file") {
      secret_file = argv[++i];
    } else if (a == "--listen") {
      listen = argv[++i];
    } else if (a == "--peer-port") {
      char *end = nullptr;
      const long port = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || port < 1 || port > 65535) return usage("--peer-port must be 1..65535");
      peers.port = static_cast<std::uint16_t>(port);
      federate = true;
    } else if (a == "--peer") {
      peers.peers.push_back(argv[++i]);
    } else if (a == "--bind") {
      peers.bind = argv[++i];
    } else if (a == "--gid-bits") {
      gid_bits = argv[++i];
    } else if (a == "--spin-us") {
      char *end = nullptr;
      spin_us = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || spin_us < 0 || spin_us > 1000000) {
        return usage("--spin-us must be 0..1000000");
      }
    } else if (a == "--server-id") {
      char *end = nullptr;
      server_id = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || server_id < 1 || server_id > rocl::impl::kMaxServerId) {
        return usage("--server-id must be 1..32767");
      }
    } else {
      return usage(("unknown option " + a).c_str());
    }
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

  if (!federate && !peers.peers.empty()) return usage("--peer needs --peer-port");
  rocl::impl::GidWidth width = rocl::impl::GidWidth::kWide;
  if (!rocl::impl::parse_gid_bits(gid_bits.c_str(), &width)) {
    return usage("--gid-bits (ROCL_GID_BITS) must be 63 or 31");
  }
  if (server_id > rocl::impl::max_server_id(width)) {
    return usage("--server-id must be 1..127 with 31-bit gids");
  }
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
