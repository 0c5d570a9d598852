// hosts.hpp - the hosts of a job that spans several (roclrun --hosts,
// --hostfile): which host each rank runs on, and how a command is run on a
// host (a RemoteShell: ssh, or `ip netns exec` for the test hosts).
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace rocl::impl {

struct HostSlots {
  std::string name;
  int slots = 0;  // 0: not given
};

// "h1,h2:4,h3" (a host's slots after a colon). ROCL_OK, or ROCL_EINVAL +
// fail() naming the bad entry.
int parse_host_list(const std::string &list, std::vector<HostSlots> *out);
// A host file: a host per line, "name", "name slots=N" or "name:N"; blank
// lines and '#' comments ignored. ROCL_OK, or a negative code + fail()
// naming the file and line.
int parse_hostfile(const std::string &path, std::vector<HostSlots> *out);

// The host (index into hosts) of each of n ranks: with slots given for every
// host, hosts are filled in order up to their slots (then round again, one
// rank per slot, when there are more ranks than slots); without, the ranks
// are spread evenly in blocks (ranks 0..k-1 on the first host, ...).
std::vector<int> place_ranks(const std::vector<HostSlots> &hosts, int n);

// How roclrun runs a command on a host. wrap() gives the local command that
// runs argv there with its stdin, stdout and stderr connected to the local
// command's own (so that output comes back and the far side sees stdin close
// when the local command dies).
class RemoteShell {
 public:
  virtual ~RemoteShell() = default;
  virtual std::vector<std::string> wrap(const std::string &host,
                                        const std::vector<std::string> &argv) const = 0;
  // Whether the hosts share this machine's file system (the local roclrun
  // binary runs there as it is).
  virtual bool same_machine() const = 0;
};

// kind "ssh": ssh -o BatchMode=yes [extra options] HOST 'quoted argv'
// (ROCL_SSH: the ssh program and its options, default "ssh"); kind
// "netns": ip netns exec PREFIX-HOST argv (the test hosts, prefix
// ROCL_NETNS_PREFIX or "rocl"); kind "local": argv as it is (every "host"
// is this machine: tests). nullptr + fail() for another kind.
std::unique_ptr<RemoteShell> make_remote_shell(const std::string &kind);

// argv as one string a POSIX shell splits back into argv ('...' quoting).
std::string shell_quote(const std::vector<std::string> &argv);

}  // namespace rocl::impl
