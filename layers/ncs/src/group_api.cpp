// group_api.cpp - many-to-1 (gather), many-to-many (allgather) and the
// barrier, on messages of the collective channel between the members.
#include <cstring>
#include <vector>

#include "caller.hpp"
#include "rocl/rocl.h"

using namespace ncs;

namespace {

// A group as a caller passed it, checked: its members and the caller's
// place among them.
struct Group {
  std::vector<NCS_id> members;
  int mine = -1;

  int index_of(NCS_id id) const {
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (members[i].thread == id.thread && members[i].process == id.process) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }
};

int read_group(const Caller &c, const NCS_id *list, Group *g) {
  if (list == nullptr || list->thread == NCS_ANY) return NCS_EINVAL;
  for (const NCS_id *m = list; m->thread != NCS_ANY; ++m) {
    if (const int rc = check_destination(c, m->thread, m->process)) return rc;
    if (g->index_of(*m) >= 0) return NCS_EINVAL;  // a thread twice
    g->members.push_back(*m);
  }
  g->mine = g->index_of(NCS_id{c.thread->id, c.process()});
  return g->mine >= 0 ? NCS_OK : NCS_ENOTMEMBER;
}

int send_to(const Caller &c, NCS_id to, const void *data, std::size_t size) {
  return c.runtime->send(Channel::kCollective, to.thread, to.process, data, size);
}

// Member from's next collective message, which must be size bytes, into
// `into` (nothing to copy when size is 0).
int receive_from(const Caller &c, NCS_id from, void *into, std::size_t size) {
  int rc = NCS_OK;
  Message *m = c.runtime->await({Channel::kCollective, from.thread, from.process}, &rc);
  if (m == nullptr) return rc;
  if (m->corrupt || m->header.payload_size != size) {
    const bool corrupt = m->corrupt;
    rocl_bfret(c.runtime->take(m).block);
    return corrupt ? NCS_ECORRUPT : NCS_ETOOBIG;
  }
  Message taken = c.runtime->take(m);
  if (size > 0) std::memcpy(into, taken.payload(), size);
  rocl_bfret(taken.block);
  return NCS_OK;
}

int gather_at_root(const Caller &c, const Group &g, const void *data, std::size_t size, char *out) {
  for (std::size_t i = 0; i < g.members.size(); ++i) {
    if (static_cast<int>(i) == g.mine) {
      if (size > 0) std::memcpy(out + i * size, data, size);
    } else if (const int rc = receive_from(c, g.members[i], out + i * size, size)) {
      return rc;
    }
  }
  return NCS_OK;
}

}  // namespace

extern "C" {

int NCS_gather(const NCS_id *group, NCS_id root, const void *data, size_t size, void *out) {
  Caller c;
  if (const int rc = enter(&c)) return rc;
  Group g;
  if (const int rc = read_group(c, group, &g)) return rc;
  const int root_index = g.index_of(root);
  if (root_index < 0) return NCS_EBADID;
  if (data == nullptr && size > 0) return NCS_EINVAL;
  if (root_index != g.mine) return send_to(c, root, data, size);
  if (out == nullptr && size > 0) return NCS_EINVAL;
  return gather_at_root(c, g, data, size, static_cast<char *>(out));
}

int NCS_allgather(const NCS_id *group, const void *data, size_t size, void *out) {
  Caller c;
  if (const int rc = enter(&c)) return rc;
  Group g;
  if (const int rc = read_group(c, group, &g)) return rc;
  if ((data == nullptr || out == nullptr) && size > 0) return NCS_EINVAL;
  for (std::size_t i = 0; i < g.members.size(); ++i) {
    if (static_cast<int>(i) == g.mine) continue;
    if (const int rc = send_to(c, g.members[i], data, size)) return rc;
  }
  return gather_at_root(c, g, data, size, static_cast<char *>(out));
}

// The first member gathers an empty message from each other member, then
// releases them with one each.
int NCS_barrier(const NCS_id *group) {
  Caller c;
  if (const int rc = enter(&c)) return rc;
  Group g;
  if (const int rc = read_group(c, group, &g)) return rc;
  const NCS_id root = g.members.front();
  if (g.mine != 0) {
    if (const int rc = send_to(c, root, nullptr, 0)) return rc;
    return receive_from(c, root, nullptr, 0);
  }
  for (std::size_t i = 1; i < g.members.size(); ++i) {
    if (const int rc = receive_from(c, g.members[i], nullptr, 0)) return rc;
  }
  for (std::size_t i = 1; i < g.members.size(); ++i) {
    if (const int rc = send_to(c, g.members[i], nullptr, 0)) return rc;
  }
  return NCS_OK;
}

}  // extern "C"
