// attr.cpp - attribute caching on communicators (MPI 3.1 section 6.7), on
// windows (6.7.3) and on datatypes (6.7.4): user keyvals with copy and
// delete callbacks, run on MPI_Comm_dup / MPI_Type_dup and MPI_Comm_free /
// MPI_Win_free / MPI_Type_free (and for MPI_COMM_SELF's attributes at
// MPI_Finalize, which libraries use to learn that MPI is ending). The
// predefined keys (MPI_TAG_UB, MPI_WIN_BASE, ...) are answered by
// MPI_Comm_get_attr in env.cpp and MPI_Win_get_attr in win.cpp.
//
// Keyvals of every kind come from one space, as in MPICH; each knows its
// kind, and one of another kind is refused with MPI_ERR_KEYVAL. The code
// is one template over the handle type; Handle<H> says where H's callbacks
// are and to which communicator its errors go.
#include <map>
#include <mutex>

#include "mpi_impl.hpp"
#include "win.hpp"

namespace {

using rmpi::fail;

enum KeyKind { kOfComms, kOfTypes, kOfWindows };
const char *const kKindName[] = {"communicator", "datatype", "window"};

struct Keyval {
  KeyKind kind = kOfComms;
  bool freed = false;  // by *_free_keyval: attributes under it stay until deleted
  MPI_Comm_copy_attr_function *comm_copy = nullptr;
  MPI_Comm_delete_attr_function *comm_del = nullptr;
  MPI_Type_copy_attr_function *type_copy = nullptr;
  MPI_Type_delete_attr_function *type_del = nullptr;
  MPI_Win_delete_attr_function *win_del = nullptr;  // windows are never copied
  void *extra = nullptr;
};

template <class H>
struct Handle;

template <>
struct Handle<MPI_Comm> {
  static constexpr KeyKind kKind = kOfComms;
  static auto copy(const Keyval &k) { return k.comm_copy; }
  static auto del(const Keyval &k) { return k.comm_del; }
  static MPI_Comm errors(MPI_Comm c) { return c; }
};

template <>
struct Handle<MPI_Datatype> {
  static constexpr KeyKind kKind = kOfTypes;
  static auto copy(const Keyval &k) { return k.type_copy; }
  static auto del(const Keyval &k) { return k.type_del; }
  static MPI_Comm errors(MPI_Datatype) { return nullptr; }  // MPI_COMM_WORLD's handler
};

template <>
struct Handle<MPI_Win> {
  static constexpr KeyKind kKind = kOfWindows;
  static auto del(const Keyval &k) { return k.win_del; }
  static MPI_Comm errors(MPI_Win w) { return w->comm; }  // the window's handler
};

// Keys above the predefined ones; a freed key stays known while objects
// still hold attributes under it (MPI 3.1 6.7.2).
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

// The keyval of H's kind, or fail()'s code: set_attr also refuses a freed one.
template <class H>
int user_key(H obj, int key, bool for_new, Keyval *k, const char *who) {
  if (key < kFirstKey || !find(key, k) || k->kind != Handle<H>::kKind) {
    return fail(Handle<H>::errors(obj), MPI_ERR_KEYVAL, who, "%d is not a %s keyval", key,
                kKindName[Handle<H>::kKind]);
  }
  if (for_new && k->freed) {
    return fail(Handle<H>::errors(obj), MPI_ERR_KEYVAL, who, "keyval %d was freed", key);
  }
  return MPI_SUCCESS;
}

template <class H>
int run_delete(H obj, int key, const Keyval &k, void *value, const char *who) {
  const auto del = Handle<H>::del(k);
  if (del == nullptr) return MPI_SUCCESS;
  if (const int rc = del(obj, key, value, k.extra); rc != MPI_SUCCESS) {
    return fail(Handle<H>::errors(obj), MPI_ERR_OTHER, who,
                "the delete callback of key %d returned %d", key, rc);
  }
  return MPI_SUCCESS;
}

template <class H>
int copy_all(H from, H to, const char *who) {
  for (const auto &[key, value] : from->attrs) {
    Keyval k;
    if (!find(key, &k) || Handle<H>::copy(k) == nullptr) continue;
    void *out = nullptr;
    int flag = 0;
    if (const int rc = Handle<H>::copy(k)(from, key, k.extra, value, &out, &flag);
        rc != MPI_SUCCESS) {
      return fail(Handle<H>::errors(from), MPI_ERR_OTHER, who,
                  "the copy callback of key %d returned %d", key, rc);
    }
    if (flag) to->attrs[key] = out;
  }
  return MPI_SUCCESS;
}

// In the order they were set is not required; the map's order is the keys'
// creation order.
template <class H>
int delete_all(H obj, const char *who) {
  while (!obj->attrs.empty()) {
    const auto it = obj->attrs.begin();
    const int key = it->first;
    void *value = it->second;
    obj->attrs.erase(it);
    Keyval k;
    if (!find(key, &k)) continue;
    if (int rc = run_delete(obj, key, k, value, who)) return rc;
  }
  return MPI_SUCCESS;
}

template <class H>
int set_attr(H obj, int key, void *value, const char *who) {
  Keyval k;
  if (int rc = user_key(obj, key, true, &k, who)) return rc;
  const auto it = obj->attrs.find(key);
  if (it != obj->attrs.end()) {
    if (int rc = run_delete(obj, key, k, it->second, who)) return rc;
  }
  obj->attrs[key] = value;
  return MPI_SUCCESS;
}

template <class H>
int get_attr(H obj, int key, void *value, int *flag, const char *who) {
  Keyval k;
  if (int rc = user_key(obj, key, false, &k, who)) return rc;
  const auto it = obj->attrs.find(key);
  *flag = it != obj->attrs.end();
  if (*flag) *static_cast<void **>(value) = it->second;
  return MPI_SUCCESS;
}

template <class H>
int delete_attr(H obj, int key, const char *who) {
  Keyval k;
  if (int rc = user_key(obj, key, false, &k, who)) return rc;
  const auto it = obj->attrs.find(key);
  if (it == obj->attrs.end()) {
    return fail(Handle<H>::errors(obj), MPI_ERR_KEYVAL, who, "no attribute under key %d", key);
  }
  void *value = it->second;
  obj->attrs.erase(it);
  return run_delete(obj, key, k, value, who);
}

int create_key(const Keyval &k, int *key) {
  std::lock_guard lock(g_lock);
  *key = g_next++;
  g_keys[*key] = k;
  return MPI_SUCCESS;
}

int free_key(int *key, KeyKind kind, const char *who) {
  {
    std::lock_guard lock(g_lock);
    const auto it = g_keys.find(*key);
    if (it == g_keys.end() || it->second.kind != kind || it->second.freed) {
      return fail(nullptr, MPI_ERR_KEYVAL, who, "%d is not a %s keyval", *key, kKindName[kind]);
    }
    // Kept for the attributes still set under it; no new ones can be.
    it->second.freed = true;
  }
  *key = MPI_KEYVAL_INVALID;
  return MPI_SUCCESS;
}

}  // namespace

namespace rmpi {

bool is_user_key(int keyval) {
  return keyval >= kFirstKey;
}

int copy_attributes(MPI_Comm from, MPI_Comm to) {
  return copy_all(from, to, "MPI_Comm_dup");
}
int delete_attributes(MPI_Comm comm, const char *who) {
  return delete_all(comm, who);
}
int copy_attributes(MPI_Datatype from, MPI_Datatype to) {
  return copy_all(from, to, "MPI_Type_dup");
}
int delete_attributes(MPI_Datatype t, const char *who) {
  return delete_all(t, who);
}
int get_user_attribute(MPI_Comm comm, int keyval, void *attribute_val, int *flag) {
  return get_attr(comm, keyval, attribute_val, flag, "MPI_Comm_get_attr");
}
int delete_attributes(MPI_Win win, const char *who) {
  return delete_all(win, who);
}
int get_user_attribute(MPI_Win win, int keyval, void *attribute_val, int *flag) {
  return get_attr(win, keyval, attribute_val, flag, "MPI_Win_get_attr");
}

}  // namespace rmpi

using namespace rmpi;

extern "C" {

int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                           MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval,
                           void *extra_state) {
  Keyval k;
  k.comm_copy = comm_copy_attr_fn;
  k.comm_del = comm_delete_attr_fn;
  k.extra = extra_state;
  return create_key(k, comm_keyval);
}

int MPI_Comm_free_keyval(int *comm_keyval) {
  return free_key(comm_keyval, kOfComms, "MPI_Comm_free_keyval");
}

int MPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val) {
  if (int rc = check_comm(comm, "MPI_Comm_set_attr")) return rc;
  return set_attr(comm, comm_keyval, attribute_val, "MPI_Comm_set_attr");
}

int MPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval) {
  if (int rc = check_comm(comm, "MPI_Comm_delete_attr")) return rc;
  return delete_attr(comm, comm_keyval, "MPI_Comm_delete_attr");
}

int MPI_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn,
                           MPI_Type_delete_attr_function *type_delete_attr_fn, int *type_keyval,
                           void *extra_state) {
  Keyval k;
  k.kind = kOfTypes;
  k.type_copy = type_copy_attr_fn;
  k.type_del = type_delete_attr_fn;
  k.extra = extra_state;
  return create_key(k, type_keyval);
}

int MPI_Type_free_keyval(int *type_keyval) {
  return free_key(type_keyval, kOfTypes, "MPI_Type_free_keyval");
}

int MPI_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val) {
  if (int rc = check_any_type(datatype, "MPI_Type_set_attr")) return rc;
  return set_attr(datatype, type_keyval, attribute_val, "MPI_Type_set_attr");
}

int MPI_Type_get_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val, int *flag) {
  if (int rc = check_any_type(datatype, "MPI_Type_get_attr")) return rc;
  return get_attr(datatype, type_keyval, attribute_val, flag, "MPI_Type_get_attr");
}

int MPI_Type_delete_attr(MPI_Datatype datatype, int type_keyval) {
  if (int rc = check_any_type(datatype, "MPI_Type_delete_attr")) return rc;
  return delete_attr(datatype, type_keyval, "MPI_Type_delete_attr");
}

// Windows are never duplicated: their copy callback is kept only to be
// accepted.
int MPI_Win_create_keyval(MPI_Win_copy_attr_function *,
                          MPI_Win_delete_attr_function *win_delete_attr_fn, int *win_keyval,
                          void *extra_state) {
  Keyval k;
  k.kind = kOfWindows;
  k.win_del = win_delete_attr_fn;
  k.extra = extra_state;
  return create_key(k, win_keyval);
}

int MPI_Win_free_keyval(int *win_keyval) {
  return free_key(win_keyval, kOfWindows, "MPI_Win_free_keyval");
}

int MPI_Win_set_attr(MPI_Win win, int win_keyval, void *attribute_val) {
  if (int rc = check_win(win, "MPI_Win_set_attr")) return rc;
  return set_attr(win, win_keyval, attribute_val, "MPI_Win_set_attr");
}

int MPI_Win_delete_attr(MPI_Win win, int win_keyval) {
  if (int rc = check_win(win, "MPI_Win_delete_attr")) return rc;
  return delete_attr(win, win_keyval, "MPI_Win_delete_attr");
}

int rocl_mpi_win_null_copy_fn(MPI_Win, int, void *, void *, void *, int *flag) {
  *flag = 0;
  return MPI_SUCCESS;
}
int rocl_mpi_win_dup_fn(MPI_Win, int, void *, void *in, void *out, int *flag) {
  *static_cast<void **>(out) = in;
  *flag = 1;
  return MPI_SUCCESS;
}
int rocl_mpi_win_null_delete_fn(MPI_Win, int, void *, void *) {
  return MPI_SUCCESS;
}

// The predefined callbacks (MPI_COMM_NULL_COPY_FN, MPI_COMM_DUP_FN,
// MPI_COMM_NULL_DELETE_FN and the MPI_TYPE_ ones).
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
int rocl_mpi_type_null_copy_fn(MPI_Datatype, int, void *, void *, void *, int *flag) {
  *flag = 0;
  return MPI_SUCCESS;
}
int rocl_mpi_type_dup_fn(MPI_Datatype, int, void *, void *in, void *out, int *flag) {
  *static_cast<void **>(out) = in;
  *flag = 1;
  return MPI_SUCCESS;
}
int rocl_mpi_type_null_delete_fn(MPI_Datatype, int, void *, void *) {
  return MPI_SUCCESS;
}

}  // extern "C"
