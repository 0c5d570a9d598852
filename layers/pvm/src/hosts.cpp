// hosts.cpp - the virtual machine as the directory describes it:
// pvm_config (the job's {type=rocl-host} resources), pvm_tasks (the
// {type=pvm-task} entries), pvm_mstat. What they return stays valid until
// the same call is made again, as in PVM.
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "pvm_impl.hpp"

using rpvm::Task;

namespace {

constexpr const char *kArchitecture = "LINUX64";
constexpr int kDataSignature = 0x408841;  // PVM 3.4.6's for LINUX64

struct HostTable {
  std::vector<std::string> names;
  std::vector<pvmhostinfo> infos;
};

struct TaskTable {
  std::vector<std::string> programs;
  std::vector<pvmtaskinfo> infos;
};

void fill_hosts(HostTable &table) {
  table.names.clear();
  table.infos.clear();
  const auto hosts = rpvm::find_all(rocl::Attributes{{"type", "rocl-host"}}.ask("host", 256));
  std::vector<int> tids;
  for (const rocl::Found &h : hosts) {
    table.names.push_back(h.attributes.get("host").value_or("?"));
    tids.push_back(rpvm::tid_of(h.gid));
  }
  if (table.names.empty()) {  // a process outside a job: its own host
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    table.names.emplace_back(name);
    tids.push_back(rpvm::tid_of(rocl_context_gid()));
  }
  for (std::size_t i = 0; i < table.names.size(); ++i) {
    table.infos.push_back(
        {tids[i], table.names[i].data(), const_cast<char *>(kArchitecture), 1000, kDataSignature});
  }
}

bool wanted(const pvmtaskinfo &info, int where) {
  return where == 0 || info.ti_tid == where || info.ti_host == where;
}

void fill_tasks(TaskTable &table, int where) {
  table.programs.clear();
  table.infos.clear();
  rocl::Attributes pattern{{"type", "pvm-task"}};
  for (const char *name : {"pvm.tid", "pvm.ptid", "pvm.host", "pvm.name", "pvm.pid"}) {
    pattern.ask(name, 256);
  }
  std::vector<pvmtaskinfo> infos;
  for (const rocl::Found &f : rpvm::find_all(pattern)) {
    const pvmtaskinfo info{rpvm::attribute_int(f, "pvm.tid"),
                           rpvm::attribute_int(f, "pvm.ptid"),
                           rpvm::attribute_int(f, "pvm.host"),
                           0,
                           nullptr,
                           rpvm::attribute_int(f, "pvm.pid")};
    if (!wanted(info, where)) continue;
    table.programs.push_back(f.attributes.get("pvm.name").value_or("?"));
    infos.push_back(info);
  }
  for (std::size_t i = 0; i < infos.size(); ++i) infos[i].ti_a_out = table.programs[i].data();
  table.infos = std::move(infos);
}

}  // namespace

extern "C" int pvm_config(int *nhost, int *narch, struct pvmhostinfo **hostp) {
  static HostTable table;
  return rpvm::call_locked("pvm_config", [&](Task &) {
    fill_hosts(table);
    if (nhost != nullptr) *nhost = int(table.infos.size());
    if (narch != nullptr) *narch = 1;
    if (hostp != nullptr) *hostp = table.infos.data();
    return PvmOk;
  });
}

extern "C" int pvm_tasks(int where, int *ntask, struct pvmtaskinfo **taskp) {
  static TaskTable table;
  return rpvm::call_locked("pvm_tasks", [&](Task &) {
    if (where < 0) return PvmBadParam;
    fill_tasks(table, where);
    if (where != 0 && table.infos.empty()) return PvmNoHost;
    if (ntask != nullptr) *ntask = int(table.infos.size());
    if (taskp != nullptr) *taskp = table.infos.data();
    return PvmOk;
  });
}

extern "C" int pvm_mstat(char *host) {
  return rpvm::call_unlocked("pvm_mstat", [&](Task &) {
    if (host == nullptr) return PvmBadParam;
    HostTable table;
    fill_hosts(table);
    for (const std::string &name : table.names) {
      if (name == host) return PvmOk;
    }
    return PvmNoHost;
  });
}

extern "C" int pvm_archcode(char *arch) {
  if (arch == nullptr) return rpvm::fail(PvmBadParam, "pvm_archcode");
  return std::strcmp(arch, kArchitecture) == 0 ? 1 : rpvm::fail(PvmNotFound, "pvm_archcode");
}
