// attr_list_api.cpp - the attribute-list functions of rocl.h (table 2):
// thin wrappers over rocl::impl::AttrList. They need no context.
#include <cstring>
#include <new>
#include <optional>
#include <string_view>

#include "directory/attr_list.hpp"
#include "rocl/rocl.h"
#include "status/status.hpp"

using rocl::impl::fail;

extern "C" {

rocl_attrl_t *rocl_new_attrl(int maxlen) {
  rocl::impl::clear_error();
  if (maxlen > 0 && static_cast<std::size_t>(maxlen) > rocl::impl::AttrList::kMaxMaxlen) {
    fail(ROCL_EINVAL, "rocl_new_attrl: maxlen %d exceeds the limit of %zu bytes", maxlen,
         rocl::impl::AttrList::kMaxMaxlen);
    return nullptr;
  }
  try {
    return new rocl_attrl_t(maxlen);
  } catch (const std::bad_alloc &) {
    fail(ROCL_ENOMEM, "rocl_new_attrl: out of memory for a list of %d bytes", maxlen);
    return nullptr;
  }
}

int rocl_add_attr(rocl_attrl_t *attrs, const char *name, const void *val, int len) {
  rocl::impl::clear_error();
  if (attrs == nullptr) {
    return fail(ROCL_EINVAL, "rocl_add_attr: the attribute list is NULL");
  }
  if (name == nullptr) {
    return fail(ROCL_EINVAL, "rocl_add_attr: the attribute name is NULL");
  }
  if (len < 0) {
    return fail(ROCL_EINVAL, "rocl_add_attr: attribute '%.64s': length %d is negative", name, len);
  }
  // Never reads more than 256 bytes of name: longer names are rejected.
  const std::size_t name_len = strnlen(name, rocl::impl::AttrList::kMaxNameLen + 1);
  try {
    return attrs->add(std::string_view(name, name_len), val, static_cast<std::size_t>(len));
  } catch (const std::bad_alloc &) {
    return fail(ROCL_ENOSPC, "rocl_add_attr: out of memory growing the list for attribute '%.64s'",
                name);
  }
}

void *rocl_get_attr(rocl_attrl_t *attrs, const char *name, int *len) {
  rocl::impl::clear_error();
  if (attrs == nullptr) {
    fail(ROCL_EINVAL, "rocl_get_attr: the attribute list is NULL");
    return nullptr;
  }
  if (name == nullptr) {
    fail(ROCL_EINVAL, "rocl_get_attr: the attribute name is NULL");
    return nullptr;
  }
  const std::size_t name_len = strnlen(name, rocl::impl::AttrList::kMaxNameLen + 1);
  const std::optional<rocl::impl::AttrList::Attr> a = attrs->find(std::string_view(name, name_len));
  if (!a) {
    fail(ROCL_ENOTFOUND, "rocl_get_attr: attribute '%.64s' is not in the list", name);
    return nullptr;
  }
  if (!a->specified()) {
    fail(ROCL_ENOTFOUND, "rocl_get_attr: attribute '%.64s' is unspecified (no answer yet)", name);
    return nullptr;
  }
  if (len != nullptr) {
    *len = static_cast<int>(a->len);  // len <= capacity <= 2^30
  }
  // The value lives in the caller's (non-const) list.
  return const_cast<std::byte *>(a->value);
}

void rocl_kill_attrl(rocl_attrl_t *attrs) {
  rocl::impl::clear_error();
  delete attrs;
}

}  // extern "C"
