// datatype.cpp - datatypes as a list of blocks (displacement, length) per
// element, in type-map order, plus lb and extent. A dense type (one block
// as long as its extent) travels straight from and to user memory; others
// are packed into, and unpacked from, contiguous bytes.
#include <algorithm>
#include <climits>
#include <cstring>
#include <cwchar>

#include "mpi_impl.hpp"
#include "reductions.hpp"

namespace {

// A predefined type: `size` data bytes in an element of `extent` bytes
// (pair types keep their padding in messages, so they stay dense).
rocl_mpi_datatype predefined(std::size_t size, std::size_t extent, rmpi::Chooser reducer) {
  return {.size = size,
          .packed = extent,
          .extent = MPI_Aint(extent),
          .blocks = {{0, extent}},
          .reducer = reducer,
          .basic_count = 1,
          .predefined = true,
          .committed = true,
          .name = {},
          .attrs = {},
          .contents = {},
          .refs = {}};
}
template <class T>
rocl_mpi_datatype basic_type(rmpi::Chooser reducer = rmpi::reducer_of<T>()) {
  return predefined(sizeof(T), sizeof(T), reducer);
}
template <class V, class I>
rocl_mpi_datatype pair_type() {
  return predefined(sizeof(V) + sizeof(I), sizeof(rmpi::Pair<V, I>), rmpi::pair<V, I>);
}

}  // namespace

using namespace rmpi;

struct rocl_mpi_datatype rocl_mpi_type_char = basic_type<char>(),
                         rocl_mpi_type_signed_char = basic_type<signed char>(),
                         rocl_mpi_type_unsigned_char = basic_type<unsigned char>(),
                         rocl_mpi_type_byte = basic_type<unsigned char>(bytes),
                         rocl_mpi_type_short = basic_type<short>(),
                         rocl_mpi_type_unsigned_short = basic_type<unsigned short>(),
                         rocl_mpi_type_int = basic_type<int>(),
                         rocl_mpi_type_unsigned = basic_type<unsigned>(),
                         rocl_mpi_type_long = basic_type<long>(),
                         rocl_mpi_type_unsigned_long = basic_type<unsigned long>(),
                         rocl_mpi_type_long_long = basic_type<long long>(),
                         rocl_mpi_type_unsigned_long_long = basic_type<unsigned long long>(),
                         rocl_mpi_type_float = basic_type<float>(),
                         rocl_mpi_type_double = basic_type<double>(),
                         rocl_mpi_type_long_double = basic_type<long double>(),
                         rocl_mpi_type_c_bool = basic_type<bool>(),
                         rocl_mpi_type_int8 = basic_type<std::int8_t>(),
                         rocl_mpi_type_uint8 = basic_type<std::uint8_t>(),
                         rocl_mpi_type_int16 = basic_type<std::int16_t>(),
                         rocl_mpi_type_uint16 = basic_type<std::uint16_t>(),
                         rocl_mpi_type_int32 = basic_type<std::int32_t>(),
                         rocl_mpi_type_uint32 = basic_type<std::uint32_t>(),
                         rocl_mpi_type_int64 = basic_type<std::int64_t>(),
                         rocl_mpi_type_uint64 = basic_type<std::uint64_t>(),
                         rocl_mpi_type_aint = basic_type<MPI_Aint>(),
                         rocl_mpi_type_count = basic_type<MPI_Count>(),
                         rocl_mpi_type_offset = basic_type<MPI_Offset>(),
                         rocl_mpi_type_wchar = basic_type<wchar_t>(nullptr),
                         rocl_mpi_type_packed = basic_type<unsigned char>(nullptr),
                         rocl_mpi_type_float_int = pair_type<float, int>(),
                         rocl_mpi_type_double_int = pair_type<double, int>(),
                         rocl_mpi_type_long_int = pair_type<long, int>(),
                         rocl_mpi_type_2int = pair_type<int, int>(),
                         rocl_mpi_type_short_int = pair_type<short, int>(),
                         rocl_mpi_type_long_double_int = pair_type<long double, int>();

namespace rmpi {
namespace {

// A new type made of copies of old placed at byte displacements `at`
// (the type map of every constructor below), with lb/extent per the
// standard: the smallest lb and largest ub of the copies.
MPI_Datatype replicate(MPI_Datatype old, const std::vector<MPI_Aint> &at) {
  auto *t = new rocl_mpi_datatype;
  MPI_Aint lb = 0, ub = 0;
  for (std::size_t k = 0; k < at.size(); ++k) {
    for (const Block &b : old->blocks) {
      if (!t->blocks.empty() &&
          t->blocks.back().disp + MPI_Aint(t->blocks.back().len) == at[k] + b.disp) {
        t->blocks.back().len += b.len;  // adjacent: one longer copy
      } else if (b.len != 0) {
        t->blocks.push_back(Block{at[k] + b.disp, b.len});
      }
    }
    const MPI_Aint l = at[k] + old->lb, u = l + old->extent;
    lb = k == 0 ? l : std::min(lb, l);
    ub = k == 0 ? u : std::max(ub, u);
  }
  t->size = old->size * at.size();
  t->packed = old->packed * at.size();
  t->lb = lb;
  t->extent = ub - lb;
  t->reducer = old->reducer;
  t->basic_count = old->basic_count * at.size();
  t->dense = t->blocks.size() <= 1 && MPI_Aint(t->packed) == t->extent;
  return t;
}

// A derived type with old's type map and none of its name, attributes or
// constructor, at lb and extent.
MPI_Datatype resized(MPI_Datatype old, MPI_Aint lb, MPI_Aint extent) {
  auto *t = new rocl_mpi_datatype(*old);
  t->predefined = t->committed = false;
  t->name.clear();
  t->attrs.clear();
  t->contents.reset();
  t->lb = lb;
  t->extent = extent;
  t->dense = t->blocks.size() <= 1 && MPI_Aint(t->packed) == t->extent;
  return t;
}

int new_type(MPI_Datatype old, const char *who, int count) {
  if (old == MPI_DATATYPE_NULL || old->magic != rocl_mpi_datatype::kMagic) {
    return fail(nullptr, MPI_ERR_TYPE, who, "the old datatype is not a datatype");
  }
  return count < 0 ? fail(nullptr, MPI_ERR_COUNT, who, "count %d is negative", count) : MPI_SUCCESS;
}

}  // namespace

void retain_type(MPI_Datatype t) {
  if (!t->predefined) t->refs.n.fetch_add(1, std::memory_order_relaxed);
}
void release_type(MPI_Datatype t) {
  if (!t->predefined && t->refs.n.fetch_sub(1, std::memory_order_acq_rel) == 1) delete t;
}

MPI_Datatype array_type(MPI_Datatype old, const std::vector<int> &sizes,
                        const std::vector<std::vector<int>> &picked, int order) {
  const std::size_t n = sizes.size();
  // Dimensions from the slowest to the fastest.
  std::vector<std::size_t> dims(n);
  for (std::size_t k = 0; k < n; ++k) dims[k] = order == MPI_ORDER_C ? k : n - 1 - k;
  std::vector<MPI_Aint> stride(n);
  MPI_Aint s = old->extent;
  for (std::size_t k = n; k-- > 0;) {
    stride[k] = s;
    s *= sizes[dims[k]];
  }
  std::vector<MPI_Aint> at;
  const bool empty =
      std::any_of(picked.begin(), picked.end(), [](const auto &p) { return p.empty(); });
  std::vector<std::size_t> idx(n, 0);
  while (!empty) {
    MPI_Aint off = 0;
    for (std::size_t k = 0; k < n; ++k) off += MPI_Aint(picked[dims[k]][idx[k]]) * stride[k];
    at.push_back(off);
    std::size_t k = n;
    while (k > 0 && ++idx[k - 1] == picked[dims[k - 1]].size()) idx[--k] = 0;
    if (k == 0) break;
  }
  MPI_Datatype elements = replicate(old, at);
  MPI_Datatype t = resized(elements, 0, s);
  delete elements;
  return t;
}

void pack(const void *buf, int count, MPI_Datatype t, void *out) {
  const char *base = static_cast<const char *>(buf);
  char *o = static_cast<char *>(out);
  for (int k = 0; k < count; ++k, base += t->extent) {
    for (const Block &b : t->blocks) {
      std::memcpy(o, base + b.disp, b.len);
      o += b.len;
    }
  }
}

void unpack(const void *in, std::size_t bytes, void *buf, int count, MPI_Datatype t) {
  const char *i = static_cast<const char *>(in);
  char *base = static_cast<char *>(buf);
  for (int k = 0; k < count && bytes > 0; ++k, base += t->extent) {
    for (const Block &b : t->blocks) {
      const std::size_t n = std::min(b.len, bytes);
      std::memcpy(base + b.disp, i, n);
      i += n;
      bytes -= n;
      if (bytes == 0) return;
    }
  }
}

Contiguous::Contiguous(const void *buf, int count, MPI_Datatype t, bool load)
    : buf_(const_cast<void *>(buf)),
      count_(count),
      type_(t),
      bytes_(t->packed * std::size_t(count)) {
  if (t->dense) {
    data_ = static_cast<char *>(buf_) + t->first();
    return;
  }
  staging_.resize(bytes_);
  data_ = staging_.data();
  if (load) pack(buf, count, t, data_);
}

void Contiguous::store(std::size_t bytes) {
  if (!type_->dense) unpack(data_, std::min(bytes, bytes_), buf_, count_, type_);
}

}  // namespace rmpi

extern "C" {

int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype) {
  if (int rc = MPI_Type_vector(count, 1, 1, oldtype, newtype)) return rc;
  record(*newtype, MPI_COMBINER_CONTIGUOUS, {count}, {}, {oldtype});
  return MPI_SUCCESS;
}

int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
                    MPI_Datatype *newtype) {
  if (int rc = new_type(oldtype, "MPI_Type_vector", count)) return rc;
  if (int rc =
          MPI_Type_create_hvector(count, blocklength, stride * oldtype->extent, oldtype, newtype)) {
    return rc;
  }
  record(*newtype, MPI_COMBINER_VECTOR, {count, blocklength, stride}, {}, {oldtype});
  return MPI_SUCCESS;
}

int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                            MPI_Datatype *newtype) {
  if (int rc = new_type(oldtype, "MPI_Type_create_hvector", count)) return rc;
  if (blocklength < 0) return fail(nullptr, MPI_ERR_ARG, "MPI_Type_vector", "negative blocklength");
  std::vector<MPI_Aint> at;
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < blocklength; ++j) at.push_back(i * stride + j * oldtype->extent);
  }
  *newtype = replicate(oldtype, at);
  record(*newtype, MPI_COMBINER_HVECTOR, {count, blocklength}, {stride}, {oldtype});
  return MPI_SUCCESS;
}

int MPI_Type_indexed(int count, const int blocklengths[], const int displacements[],
                     MPI_Datatype oldtype, MPI_Datatype *newtype) {
  if (int rc = new_type(oldtype, "MPI_Type_indexed", count)) return rc;
  std::vector<MPI_Aint> at;
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < blocklengths[i]; ++j) {
      at.push_back((MPI_Aint(displacements[i]) + j) * oldtype->extent);
    }
  }
  *newtype = replicate(oldtype, at);
  std::vector<int> ints{count};
  ints.insert(ints.end(), blocklengths, blocklengths + count);
  ints.insert(ints.end(), displacements, displacements + count);
  record(*newtype, MPI_COMBINER_INDEXED, std::move(ints), {}, {oldtype});
  return MPI_SUCCESS;
}

int MPI_Type_create_struct(int count, const int blocklengths[], const MPI_Aint displacements[],
                           const MPI_Datatype types[], MPI_Datatype *newtype) {
  if (count < 0) return fail(nullptr, MPI_ERR_COUNT, "MPI_Type_create_struct", "negative count");
  auto *t = new rocl_mpi_datatype;
  MPI_Aint lb = 0, ub = 0;
  bool first = true;
  for (int i = 0; i < count; ++i) {
    if (int rc = new_type(types[i], "MPI_Type_create_struct", blocklengths[i])) {
      delete t;
      return rc;
    }
    std::vector<MPI_Aint> at;
    for (int j = 0; j < blocklengths[i]; ++j) at.push_back(displacements[i] + j * types[i]->extent);
    if (at.empty()) continue;
    MPI_Datatype part = replicate(types[i], at);
    lb = first ? part->lb : std::min(lb, part->lb);
    ub = first ? part->lb + part->extent : std::max(ub, part->lb + part->extent);
    t->reducer = first || t->reducer == part->reducer ? part->reducer : nullptr;
    t->basic_count += part->basic_count;
    t->size += part->size;
    t->packed += part->packed;
    for (const Block &b : part->blocks) {
      if (!t->blocks.empty() && t->blocks.back().disp + MPI_Aint(t->blocks.back().len) == b.disp) {
        t->blocks.back().len += b.len;
      } else {
        t->blocks.push_back(b);
      }
    }
    first = false;
    delete part;
  }
  t->lb = lb;
  t->extent = ub - lb;
  t->dense = t->blocks.size() <= 1 && MPI_Aint(t->packed) == t->extent;
  *newtype = t;
  std::vector<int> ints{count};
  ints.insert(ints.end(), blocklengths, blocklengths + count);
  record(t, MPI_COMBINER_STRUCT, std::move(ints), {displacements, displacements + count},
         {types, types + count});
  return MPI_SUCCESS;
}

int MPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                            MPI_Datatype *newtype) {
  if (int rc = new_type(oldtype, "MPI_Type_create_resized", 0)) return rc;
  *newtype = resized(oldtype, lb, extent);
  record(*newtype, MPI_COMBINER_RESIZED, {}, {lb, extent}, {oldtype});
  return MPI_SUCCESS;
}

int MPI_Type_commit(MPI_Datatype *datatype) {
  if (int rc = new_type(*datatype, "MPI_Type_commit", 0)) return rc;
  (*datatype)->committed = true;
  return MPI_SUCCESS;
}

int MPI_Type_free(MPI_Datatype *datatype) {
  if (int rc = new_type(*datatype, "MPI_Type_free", 0)) return rc;
  if ((*datatype)->predefined) {
    return fail(nullptr, MPI_ERR_TYPE, "MPI_Type_free", "a predefined datatype cannot be freed");
  }
  if (int rc = delete_attributes(*datatype, "MPI_Type_free")) return rc;
  (*datatype)->magic = 0;
  release_type(*datatype);
  *datatype = MPI_DATATYPE_NULL;
  return MPI_SUCCESS;
}

int MPI_Type_size(MPI_Datatype datatype, int *size) {
  if (int rc = new_type(datatype, "MPI_Type_size", 0)) return rc;
  *size = datatype->size > std::size_t(INT_MAX) ? MPI_UNDEFINED : int(datatype->size);
  return MPI_SUCCESS;
}

int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent) {
  if (int rc = new_type(datatype, "MPI_Type_get_extent", 0)) return rc;
  *lb = datatype->lb;
  *extent = datatype->extent;
  return MPI_SUCCESS;
}

int MPI_Type_create_indexed_block(int count, int blocklength, const int displacements[],
                                  MPI_Datatype oldtype, MPI_Datatype *newtype) {
  if (int rc = new_type(oldtype, "MPI_Type_create_indexed_block", count)) return rc;
  const std::vector<int> lengths(std::size_t(count), blocklength);
  if (int rc = MPI_Type_indexed(count, lengths.data(), displacements, oldtype, newtype)) return rc;
  std::vector<int> ints{count, blocklength};
  ints.insert(ints.end(), displacements, displacements + count);
  record(*newtype, MPI_COMBINER_INDEXED_BLOCK, std::move(ints), {}, {oldtype});
  return MPI_SUCCESS;
}

int MPI_Type_create_hindexed(int count, const int blocklengths[], const MPI_Aint displacements[],
                             MPI_Datatype oldtype, MPI_Datatype *newtype) {
  if (int rc = new_type(oldtype, "MPI_Type_create_hindexed", count)) return rc;
  std::vector<MPI_Aint> at;
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < blocklengths[i]; ++j) at.push_back(displacements[i] + j * oldtype->extent);
  }
  *newtype = replicate(oldtype, at);
  std::vector<int> ints{count};
  ints.insert(ints.end(), blocklengths, blocklengths + count);
  record(*newtype, MPI_COMBINER_HINDEXED, std::move(ints), {displacements, displacements + count},
         {oldtype});
  return MPI_SUCCESS;
}

int MPI_Type_create_hindexed_block(int count, int blocklength, const MPI_Aint displacements[],
                                   MPI_Datatype oldtype, MPI_Datatype *newtype) {
  if (int rc = new_type(oldtype, "MPI_Type_create_hindexed_block", count)) return rc;
  const std::vector<int> lengths(std::size_t(count), blocklength);
  if (int rc = MPI_Type_create_hindexed(count, lengths.data(), displacements, oldtype, newtype)) {
    return rc;
  }
  record(*newtype, MPI_COMBINER_HINDEXED_BLOCK, {count, blocklength},
         {displacements, displacements + count}, {oldtype});
  return MPI_SUCCESS;
}

// The elements of a subarray, in the order the array stores them (C: the
// last dimension fastest), then resized to the whole array's extent.
int MPI_Type_create_subarray(int ndims, const int sizes[], const int subsizes[], const int starts[],
                             int order, MPI_Datatype oldtype, MPI_Datatype *newtype) {
  const char *who = "MPI_Type_create_subarray";
  if (int rc = new_type(oldtype, who, ndims)) return rc;
  if (ndims < 1) return fail(nullptr, MPI_ERR_ARG, who, "%d dimensions", ndims);
  if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN) {
    return fail(nullptr, MPI_ERR_ARG, who, "order %d is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN",
                order);
  }
  for (int d = 0; d < ndims; ++d) {
    if (sizes[d] < 1 || subsizes[d] < 1 || starts[d] < 0 || starts[d] + subsizes[d] > sizes[d]) {
      return fail(nullptr, MPI_ERR_ARG, who,
                  "dimension %d: size %d, subsize %d, start %d do not make a subarray", d, sizes[d],
                  subsizes[d], starts[d]);
    }
  }
  const std::vector<int> whole(sizes, sizes + ndims);
  std::vector<std::vector<int>> picked(static_cast<std::size_t>(ndims));
  for (int d = 0; d < ndims; ++d) {
    for (int i = 0; i < subsizes[d]; ++i) picked[std::size_t(d)].push_back(starts[d] + i);
  }
  *newtype = array_type(oldtype, whole, picked, order);
  std::vector<int> ints{ndims};
  for (const int *a : {sizes, subsizes, starts}) ints.insert(ints.end(), a, a + ndims);
  ints.push_back(order);
  record(*newtype, MPI_COMBINER_SUBARRAY, std::move(ints), {}, {oldtype});
  return MPI_SUCCESS;
}

int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype) {
  if (int rc = new_type(oldtype, "MPI_Type_dup", 0)) return rc;
  // Same type map, bounds and committed state; the attributes those of
  // the copy callbacks.
  MPI_Datatype t = resized(oldtype, oldtype->lb, oldtype->extent);
  t->committed = oldtype->committed;
  if (int rc = copy_attributes(oldtype, t)) {
    t->attrs.clear();  // those copied so far go with it, as the new type never existed
    delete t;
    return rc;
  }
  record(t, MPI_COMBINER_DUP, {}, {}, {oldtype});
  *newtype = t;
  return MPI_SUCCESS;
}

int MPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent) {
  if (int rc = new_type(datatype, "MPI_Type_get_true_extent", 0)) return rc;
  MPI_Aint lo = 0, hi = 0;
  bool any = false;
  for (const Block &b : datatype->blocks) {
    lo = any ? std::min(lo, b.disp) : b.disp;
    hi = any ? std::max(hi, b.disp + MPI_Aint(b.len)) : b.disp + MPI_Aint(b.len);
    any = true;
  }
  *true_lb = lo;
  *true_extent = hi - lo;
  return MPI_SUCCESS;
}

int MPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size) {
  if (int rc = new_type(datatype, "MPI_Type_size_x", 0)) return rc;
  *size = MPI_Count(datatype->size);
  return MPI_SUCCESS;
}

int MPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent) {
  if (int rc = new_type(datatype, "MPI_Type_get_extent_x", 0)) return rc;
  *lb = datatype->lb;
  *extent = datatype->extent;
  return MPI_SUCCESS;
}

// Basic elements received: whole elements times their basic count, and of
// a part of an element as many basic elements as fit, where every basic
// element of the type has one size (else MPI_UNDEFINED for a part).
int MPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count) {
  if (int rc = new_type(datatype, "MPI_Get_elements", 0)) return rc;
  const std::size_t bytes = std::size_t(status->rocl_bytes);
  if (datatype->packed == 0 || datatype->basic_count == 0) {
    *count = 0;
    return MPI_SUCCESS;
  }
  const std::size_t whole = bytes / datatype->packed, rest = bytes % datatype->packed;
  MPI_Count n = MPI_Count(whole) * MPI_Count(datatype->basic_count);
  if (rest != 0) {
    const std::size_t each = datatype->size / datatype->basic_count;
    if (each == 0 || datatype->size % datatype->basic_count != 0 || rest % each != 0) {
      *count = MPI_UNDEFINED;
      return MPI_SUCCESS;
    }
    n += MPI_Count(rest / each);
  }
  *count = n;
  return MPI_SUCCESS;
}

int MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count) {
  MPI_Count n = 0;
  if (int rc = MPI_Get_elements_x(status, datatype, &n)) return rc;
  *count = n > INT_MAX ? MPI_UNDEFINED : int(n);
  return MPI_SUCCESS;
}

MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp) {
  return base + disp;
}

MPI_Aint MPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2) {
  return addr1 - addr2;
}

int MPI_Get_address(const void *location, MPI_Aint *address) {
  *address = reinterpret_cast<MPI_Aint>(location);
  return MPI_SUCCESS;
}

}  // extern "C"
