// mbox.cpp - PVM's message boxes in rocl's directory (docs/pvm.md,
// "Message boxes"): an entry {type=pvm-mbox, pvm.class, pvm.index,
// pvm.owner, pvm.flags, pvm.size, pvm.data} holds a copy of a message. A
// putter takes an index by registering an entry for it and keeps it if no
// other task claims it too (sole_claim), as joiners of a group do. The PVM 3.3 calls pvm_insert,
// pvm_lookup and pvm_delete are message boxes holding one int.
#include <fnmatch.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "pvm_impl.hpp"

namespace rpvm {
namespace {

constexpr const char *kMboxType = "pvm-mbox";
constexpr int kFlagBits = PvmMboxMaxFlag * 2 - 1;

struct MboxEntry {
  rocl_gid_t gid;
  int index, owner, flags;
  std::size_t size;
};

std::vector<MboxEntry> entries(const char *name) {
  rocl::Attributes pattern{{"type", kMboxType}};
  if (name != nullptr) pattern.set("pvm.class", name);
  for (const char *a : {"pvm.index", "pvm.owner", "pvm.flags", "pvm.size"}) pattern.ask(a, 32);
  std::vector<MboxEntry> out;
  for (const rocl::Found &f : find_all(pattern)) {
    out.push_back({f.gid, attribute_int(f, "pvm.index"), attribute_int(f, "pvm.owner"),
                   attribute_int(f, "pvm.flags"), std::size_t(attribute_int(f, "pvm.size"))});
  }
  return out;
}

// The entry holding (name, index): the first registered for it.
const MboxEntry *at(const std::vector<MboxEntry> &all, int index) {
  for (const MboxEntry &e : all) {
    if (e.index == index) return &e;  // in increasing gid order
  }
  return nullptr;
}

int lowest_free(const std::vector<MboxEntry> &all, int from) {
  int index = from;
  while (at(all, index) != nullptr) ++index;
  return index;
}

std::string message_bytes(const MessageBuffer &b) {
  std::string bytes(b.size(), '\0');
  b.flatten(reinterpret_cast<std::byte *>(bytes.data()));
  return bytes;
}

// Registers an entry at index; the index, or -1 if another task took it.
int claim(Task &t, const char *name, int index, int flags, const std::string &bytes) {
  const std::int64_t gid =
      register_entry({{"type", kMboxType},
                      {"pvm.class", name},
                      {"pvm.index", decimal(index)},
                      {"pvm.owner", decimal(t.tid)},
                      {"pvm.flags", decimal(flags & kFlagBits)},
                      {"pvm.size", decimal(static_cast<long long>(bytes.size()))},
                      {"pvm.data", bytes}});
  if (gid <= 0) return PvmSysErr;
  const rocl::Attributes claimed{
      {"type", kMboxType}, {"pvm.class", name}, {"pvm.index", decimal(index)}};
  if (sole_claim(claimed, rocl_gid_t(gid))) return index;
  rocl_delete(rocl_gid_t(gid));
  pause_before_retry();
  return -1;
}

int put(Task &t, const char *name, const std::string &bytes, int flags) {
  for (;;) {
    const std::vector<MboxEntry> all = entries(name);
    int index = PvmMboxDirectIndexOf(flags);
    if ((flags & PvmMboxMultiInstance) != 0) {
      if (index == 0 || at(all, index) != nullptr) index = lowest_free(all, index);
    } else if (const MboxEntry *old = at(all, index)) {
      // Only the owner can replace an entry here: rocl deletes no other
      // context's resources, so PvmMboxOverWritable cannot be honoured.
      if (old->owner != t.tid) return PvmDenied;
      rocl_delete(old->gid);
    }
    const int claimed = claim(t, name, index, flags, bytes);
    if (claimed != -1) return claimed;
  }
}

// The entry recvinfo asks for (the first at or after index with
// PvmMboxFirstAvail), waiting for it with PvmMboxWaitForInfo.
std::optional<MboxEntry> wanted(const char *name, int index, int flags) {
  auto pause = std::chrono::microseconds(100);
  for (;;) {
    const std::vector<MboxEntry> all = entries(name);
    const MboxEntry *best = nullptr;
    for (const MboxEntry &e : all) {
      const bool fits = (flags & PvmMboxFirstAvail) != 0 ? e.index >= index : e.index == index;
      if (fits && (best == nullptr || e.index < best->index)) best = &e;
    }
    if (best != nullptr) return *best;
    if ((flags & PvmMboxWaitForInfo) == 0) return std::nullopt;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
}

std::optional<std::string> data_of(const MboxEntry &e) {
  rocl_attrl_t *a = rocl_new_attrl(int(e.size) + 512);
  rocl_add_attr(a, "pvm.data", nullptr, int(e.size) + 1);
  rocl_gid_t gid = e.gid;
  std::optional<std::string> data;
  int len = 0;
  if (rocl_query(&gid, a) == ROCL_OK) {
    const void *v = rocl_get_attr(a, "pvm.data", &len);
    data = v != nullptr ? std::string(static_cast<const char *>(v), std::size_t(len)) : "";
  }
  rocl_kill_attrl(a);
  return data;
}

int receive(Task &t, const char *name, int index, int flags) {
  const std::optional<MboxEntry> e = wanted(name, index, flags);
  if (!e) return PvmNotFound;
  const std::optional<std::string> data = data_of(*e);
  if (!data) return PvmNotFound;  // deleted meanwhile
  if ((flags & PvmMboxReadAndDelete) != 0) {
    if (e->owner != t.tid) return PvmDenied;
    rocl_delete(e->gid);
  }
  auto b = std::make_unique<MessageBuffer>(PvmDataDefault);
  b->append(data->data(), data->size());
  b->origin = {e->owner, 0, t.context};
  std::lock_guard guard(t.lock);
  if (t.buffers.active_receive != 0) t.buffers.free(t.buffers.active_receive);
  return t.buffers.active_receive = t.buffers.adopt(std::move(b));
}

int remove(Task &t, const char *name, int index) {
  const std::vector<MboxEntry> all = entries(name);
  const MboxEntry *e = at(all, index);
  if (e == nullptr) return PvmNotFound;
  if (e->owner != t.tid) return PvmDenied;
  return rocl_delete(e->gid) == ROCL_OK ? PvmOk : PvmNotFound;
}

bool bad_name(const char *name) {
  return name == nullptr || *name == '\0';
}

}  // namespace
}  // namespace rpvm

using rpvm::Task;

extern "C" int pvm_putinfo(char *name, int bufid, int flags) {
  return rpvm::call_unlocked("pvm_putinfo", [&](Task &t) {
    if (rpvm::bad_name(name) || bufid <= 0) return PvmBadParam;
    std::string bytes;
    {
      std::lock_guard guard(t.lock);
      const rpvm::MessageBuffer *b = t.buffers.find(bufid);
      if (b == nullptr) return PvmNoSuchBuf;
      bytes = rpvm::message_bytes(*b);
    }
    return rpvm::put(t, name, bytes, flags);
  });
}

extern "C" int pvm_recvinfo(char *name, int index, int flags) {
  return rpvm::call_unlocked("pvm_recvinfo", [&](Task &t) {
    if (rpvm::bad_name(name) || index < 0) return PvmBadParam;
    return rpvm::receive(t, name, index, flags);
  });
}

extern "C" int pvm_delinfo(char *name, int index, int flags) {
  (void)flags;
  return rpvm::call_unlocked("pvm_delinfo", [&](Task &t) {
    if (rpvm::bad_name(name) || index < 0) return PvmBadParam;
    return rpvm::remove(t, name, index);
  });
}

namespace {

// What pvm_getmboxinfo hands out, valid until its next call.
struct MboxTable {
  std::vector<std::string> names;
  std::vector<std::vector<int>> indices, owners, flags;
  std::vector<pvmmboxinfo> infos;
};

void fill(MboxTable &table, const char *pattern) {
  table = MboxTable{};
  std::map<std::string, std::vector<rpvm::MboxEntry>> classes;
  rocl::Attributes all{{"type", rpvm::kMboxType}};
  all.ask("pvm.class", 256);
  for (const rocl::Found &f : rpvm::find_all(all)) {
    const std::string name = f.attributes.get("pvm.class").value_or("");
    if (fnmatch(pattern, name.c_str(), 0) == 0 && !classes.contains(name)) {
      classes[name] = rpvm::entries(name.c_str());
    }
  }
  for (auto &[name, list] : classes) {
    table.names.push_back(name);
    table.indices.emplace_back();
    table.owners.emplace_back();
    table.flags.emplace_back();
    for (const rpvm::MboxEntry &e : list) {
      table.indices.back().push_back(e.index);
      table.owners.back().push_back(e.owner);
      table.flags.back().push_back(e.flags);
    }
  }
  for (std::size_t i = 0; i < table.names.size(); ++i) {
    table.infos.push_back({table.names[i].data(), int(table.indices[i].size()),
                           table.indices[i].data(), table.owners[i].data(), table.flags[i].data()});
  }
}

}  // namespace

extern "C" int pvm_getmboxinfo(char *pattern, int *nclasses, struct pvmmboxinfo **classes) {
  static MboxTable table;
  return rpvm::call_locked("pvm_getmboxinfo", [&](Task &) {
    fill(table, pattern != nullptr && *pattern != '\0' ? pattern : "*");
    if (nclasses != nullptr) *nclasses = int(table.infos.size());
    if (classes != nullptr) *classes = table.infos.data();
    return PvmOk;
  });
}

// PVM 3.3's database: an int per (name, index), on message boxes as PVM
// 3.4 keeps it; req -1 means any index (the first free one, the first
// held).
extern "C" int pvm_insert(char *name, int req, int data) {
  return rpvm::call_unlocked("pvm_insert", [&](Task &t) {
    if (rpvm::bad_name(name) || req < -1) return PvmBadParam;
    if (req >= 0 && !rpvm::entries(name).empty()) {
      const std::vector<rpvm::MboxEntry> all = rpvm::entries(name);
      if (rpvm::at(all, req) != nullptr) return PvmDupEntry;
    }
    const std::string bytes(reinterpret_cast<const char *>(&data), sizeof data);
    const int index = req >= 0 ? req : 0;
    return rpvm::put(t, name, bytes, PvmMboxMultiInstance | PvmMboxDirectIndex(index));
  });
}

extern "C" int pvm_lookup(char *name, int req, int *datap) {
  return rpvm::call_unlocked("pvm_lookup", [&](Task &) {
    if (rpvm::bad_name(name) || req < -1) return PvmBadParam;
    const std::optional<rpvm::MboxEntry> e =
        rpvm::wanted(name, req >= 0 ? req : 0, req >= 0 ? 0 : PvmMboxFirstAvail);
    if (!e) return PvmNoEntry;
    const std::optional<std::string> data = rpvm::data_of(*e);
    if (!data || data->size() != sizeof(int)) return PvmNoEntry;
    if (datap != nullptr) std::memcpy(datap, data->data(), sizeof(int));
    return e->index;
  });
}

extern "C" int pvm_delete(char *name, int req) {
  return rpvm::call_unlocked("pvm_delete", [&](Task &t) {
    if (rpvm::bad_name(name) || req < 0) return PvmBadParam;
    const int rc = rpvm::remove(t, name, req);
    return rc == PvmNotFound ? PvmNoEntry : rc;
  });
}
