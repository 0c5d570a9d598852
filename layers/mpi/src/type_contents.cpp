// type_contents.cpp - datatype decoding (MPI 3.1 section 4.1.13): every
// constructor records its combiner and arguments with the new type
// (record), which MPI_Type_get_envelope and MPI_Type_get_contents give back.
// The datatypes among the arguments are held by the record; those returned
// to the user are new handles (a derived one a copy the caller frees with
// MPI_Type_free, a predefined one itself), so that freeing them never
// touches the types the record or the user still hold.
#include <algorithm>

#include "mpi_impl.hpp"

namespace rmpi {

TypeContents::TypeContents(int c, std::vector<int> i, std::vector<MPI_Aint> a,
                           std::vector<MPI_Datatype> t)
    : combiner(c), ints(std::move(i)), addrs(std::move(a)), types(std::move(t)) {
  for (MPI_Datatype d : types) retain_type(d);
}

TypeContents::~TypeContents() {
  for (MPI_Datatype d : types) release_type(d);
}

void record(MPI_Datatype t, int combiner, std::vector<int> ints, std::vector<MPI_Aint> addrs,
            std::vector<MPI_Datatype> types) {
  t->contents = std::make_shared<const TypeContents>(combiner, std::move(ints), std::move(addrs),
                                                     std::move(types));
}

}  // namespace rmpi

namespace {

// A handle the caller of MPI_Type_get_contents owns: the same type map,
// bounds, committed state, name and contents, none of the attributes.
MPI_Datatype handle_for(MPI_Datatype t) {
  if (t->predefined) return t;
  auto *copy = new rocl_mpi_datatype(*t);
  copy->magic = rocl_mpi_datatype::kMagic;  // t's handle may be freed already
  copy->attrs.clear();
  return copy;
}

}  // namespace

using namespace rmpi;

extern "C" {

int MPI_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses,
                          int *num_datatypes, int *combiner) {
  if (int rc = check_any_type(datatype, "MPI_Type_get_envelope")) return rc;
  const TypeContents *c = datatype->contents.get();
  if (c == nullptr) {
    *num_integers = *num_addresses = *num_datatypes = 0;
    *combiner = MPI_COMBINER_NAMED;
    return MPI_SUCCESS;
  }
  *num_integers = int(c->ints.size());
  *num_addresses = int(c->addrs.size());
  *num_datatypes = int(c->types.size());
  *combiner = c->combiner;
  return MPI_SUCCESS;
}

int MPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses,
                          int max_datatypes, int array_of_integers[], MPI_Aint array_of_addresses[],
                          MPI_Datatype array_of_datatypes[]) {
  const char *who = "MPI_Type_get_contents";
  if (int rc = check_any_type(datatype, who)) return rc;
  const TypeContents *c = datatype->contents.get();
  if (c == nullptr) {
    return fail(nullptr, MPI_ERR_TYPE, who,
                "a predefined datatype has no contents (its combiner is MPI_COMBINER_NAMED)");
  }
  if (std::size_t(std::max(max_integers, 0)) < c->ints.size() ||
      std::size_t(std::max(max_addresses, 0)) < c->addrs.size() ||
      std::size_t(std::max(max_datatypes, 0)) < c->types.size()) {
    return fail(nullptr, MPI_ERR_ARG, who,
                "room for %d integers, %d addresses and %d datatypes; the type has %zu, %zu and "
                "%zu (MPI_Type_get_envelope)",
                max_integers, max_addresses, max_datatypes, c->ints.size(), c->addrs.size(),
                c->types.size());
  }
  std::copy(c->ints.begin(), c->ints.end(), array_of_integers);
  std::copy(c->addrs.begin(), c->addrs.end(), array_of_addresses);
  std::transform(c->types.begin(), c->types.end(), array_of_datatypes, handle_for);
  return MPI_SUCCESS;
}

}  // extern "C"
