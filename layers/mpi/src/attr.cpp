// attr.cpp - attribute caching on communicators (MPI 3.1 section 6.7):
// user keyvals with copy and delete callbacks, run on MPI_Comm_dup and
// MPI_Comm_free (and for MPI_COMM_SELF's attributes at MPI_Finalize, which
// libraries use to learn that MPI is ending). The predefined keys
// (MPI_TAG_UB, ...) are answered by MPI_Comm_get_attr in env.cpp.
#include <map>
#include <mutex>
#include <vector>

#include "mpi_impl.hpp"

namespace {

using rmpi::fail;

struct Keyval {
  MPI_Comm_copy_attr_function *copy = nullptr;
  MPI_Comm_delete_attr_function *del = nullptr;
  void *extra = nullptr;
};

// Keys above the predefined ones; a freed key stays known while
// communicators still hold attributes under it (MPI 3.1 6.7.2).
constexpr int kFirstKey = 64;
std::mutex g_lock;
std::map<int, Keyval> g_keys;
int g_next = kFirstKey;

bool find(int key, Keyval *out) {
  std::lock_guard lock(g_lock);
  const auto it = g_keys.find(key);
  if (it == g_keys.end()) return false;
  *out = it->second;
  return true;
}

}  // namespace

namespace rmpi {

bool is_user_key(int keyval) {
  return keyval >= kFirstKey;
}

int copy_attributes(MPI_Comm from, MPI_Comm to) {
  for (const auto &[key, value] : from->attrs) {
    Keyval k;
    if (!find(key, &k) || k.copy == nullptr) continue;
    void *out = nullptr;
    int flag = 0;
    const int rc = k.copy(from, key, k.extra, value, &out, &flag);
    if (rc != MPI_SUCCESS) {
      return fail(from, MPI_ERR_OTHER, "MPI_Comm_dup", "the copy callback of key %d returned %d",
                  key, rc);
    }
    if (flag) to->attrs[key] = out;
  }
  return MPI_SUCCESS;
}

int delete_attributes(MPI_Comm comm, const char *who) {
  // In the order they were set is not required; the map's order is the
  // keys' creation order.
  while (!comm->attrs.empty()) {
    const auto it = comm->attrs.begin();
    const int key = it->first;
    void *value = it->second;
    comm->attrs.erase(it);
    Keyval k;
    if (!find(key, &k) || k.del == nullptr) continue;
    if (const int rc = k.del(comm, key, value, k.extra); rc != MPI_SUCCESS) {
      return fail(comm, MPI_ERR_OTHER, who, "the delete callback of key %d returned %d", key, rc);
    }
  }
  return MPI_SUCCESS;
}

}  // namespace rmpi

using namespace rmpi;

extern "C" {

int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                           MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval,
                           void *extra_state) {
  std::lock_guard lock(g_lock);
  const int key = g_next++;
  g_keys[key] = Keyval{comm_copy_attr_fn, comm_delete_attr_fn, extra_state};
  *comm_keyval = key;
  return MPI_SUCCESS;
}

int MPI_Comm_free_keyval(int *comm_keyval) {
  {
    std::lock_guard lock(g_lock);
    if (g_keys.count(*comm_keyval) == 0) {
      return fail(nullptr, MPI_ERR_KEYVAL, "MPI_Comm_free_keyval", "%d is not a keyval",
                  *comm_keyval);
    }
    // Kept for the attributes still set under it; no new ones can be.
  }
  *comm_keyval = MPI_KEYVAL_INVALID;
  return MPI_SUCCESS;
}

int MPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val) {
  if (int rc = check_comm(comm, "MPI_Comm_set_attr")) return rc;
  Keyval k;
  if (!is_user_key(comm_keyval) || !find(comm_keyval, &k)) {
    return fail(comm, MPI_ERR_KEYVAL, "MPI_Comm_set_attr", "%d is not a user keyval", comm_keyval);
  }
  const auto it = comm->attrs.find(comm_keyval);
  if (it != comm->attrs.end() && k.del != nullptr) {
    if (const int rc = k.del(comm, comm_keyval, it->second, k.extra); rc != MPI_SUCCESS) {
      return fail(comm, MPI_ERR_OTHER, "MPI_Comm_set_attr",
                  "the delete callback of key %d returned %d", comm_keyval, rc);
    }
  }
  comm->attrs[comm_keyval] = attribute_val;
  return MPI_SUCCESS;
}

int MPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval) {
  if (int rc = check_comm(comm, "MPI_Comm_delete_attr")) return rc;
  const auto it = comm->attrs.find(comm_keyval);
  if (it == comm->attrs.end()) {
    return fail(comm, MPI_ERR_KEYVAL, "MPI_Comm_delete_attr", "no attribute under key %d",
                comm_keyval);
  }
  void *value = it->second;
  comm->attrs.erase(it);
  Keyval k;
  if (find(comm_keyval, &k) && k.del != nullptr) {
    if (const int rc = k.del(comm, comm_keyval, value, k.extra); rc != MPI_SUCCESS) {
      return fail(comm, MPI_ERR_OTHER, "MPI_Comm_delete_attr",
                  "the delete callback of key %d returned %d", comm_keyval, rc);
    }
  }
  return MPI_SUCCESS;
}

// The predefined callbacks (MPI_COMM_NULL_COPY_FN, MPI_COMM_DUP_FN,
// MPI_COMM_NULL_DELETE_FN).
int rocl_mpi_comm_null_copy_fn(MPI_Comm, int, void *, void *, void *, int *flag) {
  *flag = 0;
  return MPI_SUCCESS;
}
int rocl_mpi_comm_dup_fn(MPI_Comm, int, void *, void *in, void *out, int *flag) {
  *static_cast<void **>(out) = in;
  *flag = 1;
  return MPI_SUCCESS;
}
int rocl_mpi_comm_null_delete_fn(MPI_Comm, int, void *, void *) {
  return MPI_SUCCESS;
}

}  // extern "C"
