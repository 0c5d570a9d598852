// info.cpp - MPI_Info objects (MPI 3.1 chapter 9): ordered (key, value)
// strings. rocl's MPI reads no hint from them yet; they are kept, copied
// and answered as the standard says, so that programs that pass hints run.
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "mpi_impl.hpp"

struct rocl_mpi_info {
  static constexpr std::uint32_t kMagic = 0x696e666f;
  std::uint32_t magic = kMagic;
  std::vector<std::pair<std::string, std::string>> entries;
  std::pair<std::string, std::string> *find(const char *key) {
    for (auto &e : entries) {
      if (e.first == key) return &e;
    }
    return nullptr;
  }
};

namespace {

using rmpi::fail;

int check_info(MPI_Info info, const char *who) {
  if (info == MPI_INFO_NULL) return fail(nullptr, MPI_ERR_INFO, who, "the info is MPI_INFO_NULL");
  if (info->magic != rocl_mpi_info::kMagic) {
    return fail(nullptr, MPI_ERR_INFO, who, "%p is not an info object (freed?)",
                static_cast<void *>(info));
  }
  return MPI_SUCCESS;
}

int check_key(const char *key, const char *who) {
  if (key == nullptr) return fail(nullptr, MPI_ERR_INFO_KEY, who, "the key is NULL");
  const std::size_t n = std::strlen(key);
  if (n == 0 || n > MPI_MAX_INFO_KEY) {
    return fail(nullptr, MPI_ERR_INFO_KEY, who, "a key of %zu characters (1..%d)", n,
                MPI_MAX_INFO_KEY);
  }
  return MPI_SUCCESS;
}

}  // namespace

extern "C" {

int MPI_Info_create(MPI_Info *info) {
  *info = new rocl_mpi_info;
  return MPI_SUCCESS;
}

int MPI_Info_set(MPI_Info info, const char *key, const char *value) {
  if (int rc = check_info(info, "MPI_Info_set")) return rc;
  if (int rc = check_key(key, "MPI_Info_set")) return rc;
  if (value == nullptr || std::strlen(value) > MPI_MAX_INFO_VAL) {
    return fail(nullptr, MPI_ERR_INFO_VALUE, "MPI_Info_set",
                "the value of '%s' is NULL or longer than %d", key, MPI_MAX_INFO_VAL);
  }
  if (auto *e = info->find(key)) {
    e->second = value;
  } else {
    info->entries.emplace_back(key, value);
  }
  return MPI_SUCCESS;
}

int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag) {
  if (int rc = check_info(info, "MPI_Info_get")) return rc;
  if (int rc = check_key(key, "MPI_Info_get")) return rc;
  if (valuelen < 0) return fail(nullptr, MPI_ERR_ARG, "MPI_Info_get", "valuelen %d", valuelen);
  const auto *e = info->find(key);
  *flag = e != nullptr;
  if (e != nullptr) {
    // At most valuelen characters, then the NUL (value has valuelen + 1).
    const std::size_t n = std::min(e->second.size(), std::size_t(valuelen));
    std::memcpy(value, e->second.data(), n);
    value[n] = '\0';
  }
  return MPI_SUCCESS;
}

int MPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag) {
  if (int rc = check_info(info, "MPI_Info_get_valuelen")) return rc;
  if (int rc = check_key(key, "MPI_Info_get_valuelen")) return rc;
  const auto *e = info->find(key);
  *flag = e != nullptr;
  if (e != nullptr) *valuelen = int(e->second.size());
  return MPI_SUCCESS;
}

int MPI_Info_get_nkeys(MPI_Info info, int *nkeys) {
  if (int rc = check_info(info, "MPI_Info_get_nkeys")) return rc;
  *nkeys = int(info->entries.size());
  return MPI_SUCCESS;
}

int MPI_Info_get_nthkey(MPI_Info info, int n, char *key) {
  if (int rc = check_info(info, "MPI_Info_get_nthkey")) return rc;
  if (n < 0 || n >= int(info->entries.size())) {
    return fail(nullptr, MPI_ERR_ARG, "MPI_Info_get_nthkey", "key %d of %zu", n,
                info->entries.size());
  }
  const std::string &k = info->entries[std::size_t(n)].first;
  std::memcpy(key, k.c_str(), k.size() + 1);
  return MPI_SUCCESS;
}

int MPI_Info_delete(MPI_Info info, const char *key) {
  if (int rc = check_info(info, "MPI_Info_delete")) return rc;
  if (int rc = check_key(key, "MPI_Info_delete")) return rc;
  auto *e = info->find(key);
  if (e == nullptr) {
    return fail(nullptr, MPI_ERR_INFO_NOKEY, "MPI_Info_delete", "no key '%s' in the info", key);
  }
  info->entries.erase(info->entries.begin() + (e - info->entries.data()));
  return MPI_SUCCESS;
}

int MPI_Info_dup(MPI_Info info, MPI_Info *newinfo) {
  if (int rc = check_info(info, "MPI_Info_dup")) return rc;
  *newinfo = new rocl_mpi_info(*info);
  return MPI_SUCCESS;
}

int MPI_Info_free(MPI_Info *info) {
  if (info == nullptr) return fail(nullptr, MPI_ERR_ARG, "MPI_Info_free", "info is NULL");
  if (int rc = check_info(*info, "MPI_Info_free")) return rc;
  (*info)->magic = 0;
  delete *info;
  *info = MPI_INFO_NULL;
  return MPI_SUCCESS;
}

// Communicator hints: kept nowhere (rocl's MPI takes none), so a dup with
// info is a dup and the info in use is an empty one.
int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm) {
  if (info != MPI_INFO_NULL) {
    if (int rc = check_info(info, "MPI_Comm_dup_with_info")) return rc;
  }
  return MPI_Comm_dup(comm, newcomm);
}

int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info) {
  if (int rc = rmpi::check_comm(comm, "MPI_Comm_set_info")) return rc;
  return check_info(info, "MPI_Comm_set_info");
}

int MPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used) {
  if (int rc = rmpi::check_comm(comm, "MPI_Comm_get_info")) return rc;
  return MPI_Info_create(info_used);
}

}  // extern "C"
