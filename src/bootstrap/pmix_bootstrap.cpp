// pmix_bootstrap.cpp - join_launchers_job() over PMIx (job_bootstrap.hpp).
#include <dirent.h>
#include <netinet/in.h>
#include <pmix.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bootstrap/job_bootstrap.hpp"
#include "directory/directory_server.hpp"
#include "directory/peer_servers.hpp"
#include "os/net.hpp"
#include "security/job_secret.hpp"
#include "status/status.hpp"

namespace rocl::impl::bootstrap {
namespace {

constexpr const char *kSecretKey = "rocl.secret";
constexpr const char *kPeerKey = "rocl.directory.peer";

[[noreturn]] void refuse(const std::string &step, const std::string &why) {
  throw std::invalid_argument("joining the PMIx job: " + step + ": " + why);
}

// One PMIx client session: ended (PMIx_Finalize) with the object.
class Pmix {
 public:
  Pmix() {
    const pmix_status_t rc = PMIx_Init(&me_, nullptr, 0);
    if (rc != PMIX_SUCCESS) refuse("PMIx_Init", PMIx_Error_string(rc));
    PMIX_LOAD_PROCID(&job_, me_.nspace, PMIX_RANK_WILDCARD);
  }
  ~Pmix() { PMIx_Finalize(nullptr, 0); }
  Pmix(const Pmix &) = delete;
  Pmix &operator=(const Pmix &) = delete;

  std::uint32_t rank() const { return me_.rank; }
  std::string nspace() const { return me_.nspace; }

  // A number the job or this process has under `key`.
  std::uint32_t number(const char *key, bool of_job) {
    pmix_value_t *v = nullptr;
    const pmix_status_t rc = PMIx_Get(of_job ? &job_ : &me_, key, nullptr, 0, &v);
    if (rc != PMIX_SUCCESS) refuse(std::string("PMIx_Get ") + key, PMIx_Error_string(rc));
    std::uint32_t n = 0;
    switch (v->type) {
      case PMIX_UINT16:
        n = v->data.uint16;
        break;
      case PMIX_UINT32:
        n = v->data.uint32;
        break;
      case PMIX_INT:
        n = static_cast<std::uint32_t>(v->data.integer);
        break;
      default:
        PMIX_VALUE_RELEASE(v);
        refuse(std::string("PMIx_Get ") + key, "not a number");
    }
    PMIX_VALUE_RELEASE(v);
    return n;
  }
  // The string `rank` published under `key`; "" when it published none.
  std::string text(std::uint32_t rank, const char *key) {
    pmix_proc_t who;
    PMIX_LOAD_PROCID(&who, me_.nspace, rank);
    pmix_value_t *v = nullptr;
    if (PMIx_Get(&who, key, nullptr, 0, &v) != PMIX_SUCCESS) return "";
    std::string out = v->type == PMIX_STRING && v->data.string ? v->data.string : "";
    PMIX_VALUE_RELEASE(v);
    return out;
  }
  void put(const char *key, const std::string &value) {
    pmix_value_t v;
    PMIX_VALUE_LOAD(&v, value.c_str(), PMIX_STRING);
    const pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &v);
    PMIX_VALUE_DESTRUCT(&v);
    if (rc != PMIX_SUCCESS) refuse(std::string("PMIx_Put ") + key, PMIx_Error_string(rc));
  }
  // Every rank of the job meets here; with `collect`, what each put is
  // then known to all.
  void fence(const char *step, bool collect) {
    if (collect) {
      const pmix_status_t rc = PMIx_Commit();
      if (rc != PMIX_SUCCESS) refuse(step, std::string("PMIx_Commit: ") + PMIx_Error_string(rc));
    }
    pmix_info_t info;
    bool yes = collect;
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    const pmix_status_t rc = PMIx_Fence(&job_, 1, &info, 1);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS) refuse(step, std::string("PMIx_Fence: ") + PMIx_Error_string(rc));
  }
  std::string host_name() {
    pmix_value_t *v = nullptr;
    if (PMIx_Get(&me_, PMIX_HOSTNAME, nullptr, 0, &v) != PMIX_SUCCESS) return "";
    std::string out = v->type == PMIX_STRING && v->data.string ? v->data.string : "";
    PMIX_VALUE_RELEASE(v);
    return out;
  }

 private:
  pmix_proc_t me_{};
  pmix_proc_t job_{};
};

// The job folder, made 0700 by whoever comes first; refused if it is not
// ours and private.
std::string job_folder(const std::string &nspace) {
  std::string base = "/tmp/rocl-" + std::to_string(::getuid());
  if (::mkdir(base.c_str(), 0700) != 0 && errno != EEXIST) refuse("mkdir " + base, strerror(errno));
  std::string folder = base + "/pmix-" + nspace;
  if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) {
    refuse("mkdir " + folder, strerror(errno));
  }
  struct stat st {};
  if (::lstat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid() ||
      (st.st_mode & 077) != 0) {
    refuse(folder, "not a folder of this user's, private to it");
  }
  return folder;
}

// Removes the folders of this user's PMIx jobs that crashed: every process
// of a job keeps its secret file secret.<rank>.<pid> there until it ends,
// so a folder whose secret files all name dead processes is left over.
// (A folder with none is a job starting, or one that ended cleanly and
// removed it already.) Only processes of this host share /tmp and pids.
void remove_crashed_job_folders(const std::string &base, const std::string &ours) {
  DIR *d = ::opendir(base.c_str());
  if (d == nullptr) return;
  std::vector<std::string> stale;
  while (dirent *e = ::readdir(d)) {
    const std::string name = e->d_name;
    const std::string folder = base + "/" + name;
    if (name.rfind("pmix-", 0) != 0 || folder == ours) continue;
    DIR *f = ::opendir(folder.c_str());
    if (f == nullptr) continue;
    bool any = false, alive = false;
    while (dirent *g = ::readdir(f)) {
      const std::string file = g->d_name;
      if (file.rfind("secret.", 0) != 0) continue;
      const auto dot = file.rfind('.');
      const long pid = std::strtol(file.c_str() + dot + 1, nullptr, 10);
      if (dot < 7 || pid <= 0) continue;
      any = true;
      alive = alive || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
    }
    ::closedir(f);
    if (any && !alive) stale.push_back(folder);
  }
  ::closedir(d);
  for (const std::string &folder : stale) {
    if (DIR *f = ::opendir(folder.c_str())) {
      while (dirent *g = ::readdir(f)) {
        if (g->d_name[0] != '.') ::unlink((folder + "/" + g->d_name).c_str());
      }
      ::closedir(f);
    }
    if (::rmdir(folder.c_str()) == 0) {
      std::fprintf(stderr, "rocl: removed %s, left by a PMIx job whose processes are gone\n",
                   folder.c_str());
    }
  }
}

// A UDP socket bound to an ephemeral port on every address (the directory
// server takes it over), and that port.
int bound_udp(std::uint16_t *port) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) refuse("the directory's UDP socket", strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0) {
    const int err = errno;
    ::close(fd);
    refuse("the directory's UDP socket", strerror(err));
  }
  *port = ntohs(a.sin_port);
  return fd;
}

class PmixJob final : public Job {
 public:
  PmixJob() {
    const std::uint32_t size = pmix_.number(PMIX_JOB_SIZE, true);
    const std::uint32_t hosts = pmix_.number(PMIX_NUM_NODES, true);
    const std::uint32_t node = pmix_.number(PMIX_NODEID, false);
    const bool hosts_server = pmix_.number(PMIX_LOCAL_RANK, false) == 0;
    folder_ = job_folder(pmix_.nspace());
    if (hosts_server) {
      remove_crashed_job_folders(folder_.substr(0, folder_.rfind('/')), folder_);
    }
    if (node + 1 > kMaxServerId) refuse("the host's server id", "more hosts than server ids");

    // The secret from rank 0; each host's first rank publishes where its
    // server hears the others.
    if (pmix_.rank() == 0) {
      pmix_.put(kSecretKey, JobSecret::generate().to_hex());
    }
    int udp = -1;
    std::uint16_t udp_port = 0;
    std::string own_peer;
    if (hosts_server && hosts > 1) {
      in_addr here{};
      if (!os::resolve_ipv4("auto", &here)) {
        refuse("the host's address", "no interface that is up and not loopback");
      }
      udp = bound_udp(&udp_port);
      own_peer = os::ipv4_text(here) + ":" + std::to_string(udp_port);
      pmix_.put(kPeerKey, own_peer);
    }
    pmix_.fence("exchanging the secret and the directory servers' addresses", true);
    const std::string secret_hex = pmix_.text(0, kSecretKey);
    if (secret_hex.size() != 2 * JobSecret::kBytes) refuse("the job secret", "rank 0 gave none");
    secret_file_ =
        folder_ + "/secret." + std::to_string(pmix_.rank()) + "." + std::to_string(::getpid());
    ::unlink(secret_file_.c_str());
    if (JobSecret::from_hex(secret_hex, &secret_) != ROCL_OK ||
        secret_.write_file(secret_file_) != ROCL_OK) {
      refuse("writing the job secret", last_error());
    }
    const std::string socket = folder_ + "/dir-" + std::to_string(node) + ".sock";
    if (hosts_server) {
      server_ =
          std::make_unique<DirectoryServer>(socket, secret_, static_cast<std::uint16_t>(node + 1));
      server_->set_log(
          [](const std::string &line) { std::fprintf(stderr, "rocl: %s\n", line.c_str()); });
      if (hosts > 1) {
        PeerConfig peers;
        peers.port = udp_port;
        peers.socket_fd = udp;
        peers.broadcast = false;
        for (std::uint32_t r = 0; r < size; ++r) {
          const std::string where = pmix_.text(r, kPeerKey);
          if (!where.empty() && where != own_peer) peers.peers.push_back(where);
        }
        server_->set_peers(std::move(peers));
      }
      if (server_->start() != ROCL_OK) refuse("starting the host's directory server", last_error());
    }
    pmix_.fence("waiting for every host's directory server", false);

    set("ROCL_RANK", std::to_string(pmix_.rank()));
    set("ROCL_SIZE", std::to_string(size));
    set("ROCL_JOB_DIR", folder_);
    set("ROCL_SECRET_FILE", secret_file_);
    set("ROCL_DIRECTORY", "unix:" + socket);
    const std::string host = pmix_.host_name();
    if (!host.empty()) set("ROCL_HOST_NAME", host);
    if (hosts > 1 && std::getenv("ROCL_TCP_BIND") == nullptr) set("ROCL_TCP_BIND", "auto");
  }

  ~PmixJob() override {
    try {
      pmix_.fence("ending the job", false);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "rocl: %s\n", e.what());
    }
    if (server_) server_->stop();
    ::unlink(secret_file_.c_str());
    ::rmdir(folder_.c_str());  // the last one out removes it
  }

 private:
  static void set(const char *name, const std::string &value) { ::setenv(name, value.c_str(), 1); }

  Pmix pmix_;
  std::string folder_;
  std::string secret_file_;
  JobSecret secret_;
  std::unique_ptr<DirectoryServer> server_;
};

}  // namespace

std::unique_ptr<Job> join_launchers_job() {
  const char *nspace = std::getenv("PMIX_NAMESPACE");
  const char *directory = std::getenv("ROCL_DIRECTORY");
  if (nspace == nullptr || std::getenv("PMIX_RANK") == nullptr) return nullptr;
  if (directory != nullptr && *directory != '\0') return nullptr;
  return std::make_unique<PmixJob>();
}

}  // namespace rocl::impl::bootstrap
