// rma_layout.cpp - what one-sided operations do to a target's memory,
// given the target data's layout: shared by the direct engine (the origin
// applies them to mapped memory) and the RMA agent (the target's process
// applies what a message asks).
#include <cstring>
#include <iterator>

#include "reductions.hpp"
#include "win.hpp"

namespace rmpi {

Layout Layout::of(MPI_Datatype t) {
  return Layout{.blocks = t->blocks, .extent = t->extent, .packed = t->packed};
}

MPI_Aint Layout::low(int count) const {
  MPI_Aint lo = 0;
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    lo = k == 0 ? blocks[k].disp : std::min(lo, blocks[k].disp);
  }
  return count > 0 && extent < 0 ? lo + MPI_Aint(count - 1) * extent : lo;
}

MPI_Aint Layout::high(int count) const {
  MPI_Aint hi = 0;
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    const MPI_Aint end = blocks[k].disp + MPI_Aint(blocks[k].len);
    hi = k == 0 ? end : std::max(hi, end);
  }
  return count > 0 && extent > 0 ? hi + MPI_Aint(count - 1) * extent : hi;
}

namespace {

bool contiguous(const Layout &l) {
  return l.blocks.size() == 1 && MPI_Aint(l.packed) == l.extent;
}

}  // namespace

void read_elements(const char *at, int count, const Layout &l, char *packed) {
  if (contiguous(l)) {
    std::memcpy(packed, at + l.blocks[0].disp, std::size_t(count) * l.packed);
    return;
  }
  for (int i = 0; i < count; ++i) {
    for (const Block &b : l.blocks) {
      std::memcpy(packed, at + MPI_Aint(i) * l.extent + b.disp, b.len);
      packed += b.len;
    }
  }
}

void write_elements(char *at, int count, const Layout &l, const char *packed) {
  if (contiguous(l)) {
    std::memcpy(at + l.blocks[0].disp, packed, std::size_t(count) * l.packed);
    return;
  }
  for (int i = 0; i < count; ++i) {
    for (const Block &b : l.blocks) {
      std::memcpy(at + MPI_Aint(i) * l.extent + b.disp, packed, b.len);
      packed += b.len;
    }
  }
}

void accumulate_elements(char *at, int count, const Layout &l, int builtin, MPI_Datatype basic,
                         const char *in, char *old) {
  const std::size_t bytes = std::size_t(count) * l.packed;
  if (old != nullptr) read_elements(at, count, l, old);
  if (builtin == kNoOp) return;
  if (builtin == kReplace) {
    write_elements(at, count, l, in);
    return;
  }
  const Fn fn = basic->reducer(builtin);
  const std::size_t n = bytes / basic->packed;
  if (contiguous(l)) {
    fn(in, at + l.blocks[0].disp, n);
    return;
  }
  std::vector<char> staging(bytes);
  read_elements(at, count, l, staging.data());
  fn(in, staging.data(), n);
  write_elements(at, count, l, staging.data());
}

}  // namespace rmpi

namespace rmpi {
namespace {

#define ROCL_MPI_TYPE_ADDRESS(name) &rocl_mpi_type_##name,
rocl_mpi_datatype *const kPredefined[] = {ROCL_MPI_TYPES(ROCL_MPI_TYPE_ADDRESS)};
#undef ROCL_MPI_TYPE_ADDRESS
constexpr int kPredefinedCount = int(std::size(kPredefined));

}  // namespace

MPI_Datatype basic_of(MPI_Datatype t) {
  if (t->predefined) return t;
  if (t->reducer == nullptr || t->basic_count == 0) return nullptr;
  const std::size_t each = t->packed / t->basic_count;
  for (MPI_Datatype p : kPredefined) {
    if (p->reducer == t->reducer && p->packed == each) return p;
  }
  return nullptr;
}

int basic_index(MPI_Datatype basic) {
  for (int i = 0; i < kPredefinedCount; ++i) {
    if (kPredefined[i] == basic) return i;
  }
  return -1;
}

MPI_Datatype basic_at(int index) {
  return index >= 0 && index < kPredefinedCount ? kPredefined[index] : nullptr;
}

}  // namespace rmpi
