// names.cpp - object names (MPI 3.1 section 6.8) and packing (section
// 4.2). Predefined communicators and datatypes have their standard names;
// a name set on an object is kept with it (not copied by a dup).
#include <cstring>
#include <string>

#include "mpi_impl.hpp"

namespace {

using rmpi::fail;

// The standard name of a predefined type: "MPI_" and its name in capitals
// (the fixed-width integers end in "_T").
std::string predefined_name(MPI_Datatype t) {
#define ROCL_MPI_NAME_OF(n) \
  if (t == &rocl_mpi_type_##n) return #n;
  const std::string base = [t]() -> std::string {
    ROCL_MPI_TYPES(ROCL_MPI_NAME_OF)
    return "";
  }();
#undef ROCL_MPI_NAME_OF
  if (base.empty()) return "";
  std::string out = "MPI_";
  for (char c : base) out.push_back(c >= 'a' && c <= 'z' ? char(c - 'a' + 'A') : c);
  if (base.find("int") != std::string::npos && base.back() >= '0' && base.back() <= '9') {
    out += "_T";  // MPI_INT8_T ... MPI_UINT64_T
  }
  return out == "MPI_LONG_LONG" ? "MPI_LONG_LONG_INT" : out;
}

int set(std::string *name, const char *value, const char *who) {
  if (value == nullptr) return fail(nullptr, MPI_ERR_ARG, who, "the name is NULL");
  const std::size_t n = std::strlen(value);
  if (n >= MPI_MAX_OBJECT_NAME) {
    return fail(nullptr, MPI_ERR_ARG, who, "a name of %zu characters (at most %d)", n,
                MPI_MAX_OBJECT_NAME - 1);
  }
  *name = value;
  return MPI_SUCCESS;
}

void get(const std::string &name, char *out, int *resultlen) {
  std::memcpy(out, name.c_str(), name.size() + 1);
  *resultlen = int(name.size());
}

}  // namespace

extern "C" {

int MPI_Comm_set_name(MPI_Comm comm, const char *comm_name) {
  if (int rc = rmpi::check_comm(comm, "MPI_Comm_set_name")) return rc;
  return set(&comm->name, comm_name, "MPI_Comm_set_name");
}

int MPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen) {
  if (int rc = rmpi::check_comm(comm, "MPI_Comm_get_name")) return rc;
  const char *fallback = comm == MPI_COMM_WORLD  ? "MPI_COMM_WORLD"
                         : comm == MPI_COMM_SELF ? "MPI_COMM_SELF"
                                                 : "";
  get(comm->name.empty() ? std::string(fallback) : comm->name, comm_name, resultlen);
  return MPI_SUCCESS;
}

// Names may be given to types not yet committed.
int MPI_Type_set_name(MPI_Datatype datatype, const char *type_name) {
  if (int rc = rmpi::check_any_type(datatype, "MPI_Type_set_name")) return rc;
  return set(&datatype->name, type_name, "MPI_Type_set_name");
}

int MPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen) {
  if (int rc = rmpi::check_any_type(datatype, "MPI_Type_get_name")) return rc;
  get(datatype->name.empty() ? predefined_name(datatype) : datatype->name, type_name, resultlen);
  return MPI_SUCCESS;
}

int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size) {
  if (int rc = rmpi::check_comm(comm, "MPI_Pack_size")) return rc;
  if (int rc = rmpi::check_type(comm, datatype, "MPI_Pack_size")) return rc;
  if (int rc = rmpi::check_count(comm, incount, "MPI_Pack_size")) return rc;
  const std::size_t n = datatype->packed * std::size_t(incount);
  if (n > std::size_t(INT32_MAX)) {
    return fail(comm, MPI_ERR_COUNT, "MPI_Pack_size", "%zu bytes do not fit an int", n);
  }
  *size = int(n);
  return MPI_SUCCESS;
}

int MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize,
             int *position, MPI_Comm comm) {
  if (int rc = rmpi::check_comm(comm, "MPI_Pack")) return rc;
  if (int rc = rmpi::check_type(comm, datatype, "MPI_Pack")) return rc;
  if (int rc = rmpi::check_count(comm, incount, "MPI_Pack")) return rc;
  const std::size_t n = datatype->packed * std::size_t(incount);
  if (*position < 0 || std::size_t(*position) + n > std::size_t(std::max(outsize, 0))) {
    return fail(comm, MPI_ERR_TRUNCATE, "MPI_Pack",
                "%zu bytes at position %d do not fit the %d bytes of the buffer", n, *position,
                outsize);
  }
  rmpi::pack(inbuf, incount, datatype, static_cast<char *>(outbuf) + *position);
  *position += int(n);
  return MPI_SUCCESS;
}

int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
               MPI_Datatype datatype, MPI_Comm comm) {
  if (int rc = rmpi::check_comm(comm, "MPI_Unpack")) return rc;
  if (int rc = rmpi::check_type(comm, datatype, "MPI_Unpack")) return rc;
  if (int rc = rmpi::check_count(comm, outcount, "MPI_Unpack")) return rc;
  const std::size_t n = datatype->packed * std::size_t(outcount);
  if (*position < 0 || std::size_t(*position) + n > std::size_t(std::max(insize, 0))) {
    return fail(comm, MPI_ERR_TRUNCATE, "MPI_Unpack",
                "%zu bytes at position %d are more than the %d bytes of the buffer", n, *position,
                insize);
  }
  rmpi::unpack(static_cast<const char *>(inbuf) + *position, n, outbuf, outcount, datatype);
  *position += int(n);
  return MPI_SUCCESS;
}

}  // extern "C"
