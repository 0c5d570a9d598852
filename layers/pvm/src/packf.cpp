// packf.cpp - pvm_packf and pvm_unpackf: printf-like formats over the
// pvm_pk* / pvm_upk* calls (PVM 3.4's grammar: %[+][count][.stride]
// [h|l|u]...(c|d|f|x|s); an item without a count is passed by value to
// pvm_packf, every item by address to pvm_unpackf).
#include <cctype>
#include <cstdarg>

#include "pvm_impl.hpp"

namespace {

struct Conversion {
  bool init = false;  // "%+": pvm_packf's encoding for pvm_initsend
  bool counted = false;
  int count = 1, stride = 1;
  bool is_short = false, is_long = false;
  char type = 0;  // c d f x s
};

int number(const char *&f, va_list *ap) {
  if (*f == '*') {
    ++f;
    return va_arg(*ap, int);
  }
  int n = 0;
  while (std::isdigit(static_cast<unsigned char>(*f))) n = n * 10 + (*f++ - '0');
  return n;
}

// Reads one conversion after a '%'; false on a malformed format.
bool parse(const char *&f, va_list *ap, Conversion *c) {
  if (*f == '+') {
    ++f;
    c->init = true;
    return true;
  }
  if (*f == '*' || std::isdigit(static_cast<unsigned char>(*f))) {
    c->counted = true;
    c->count = number(f, ap);
  }
  if (*f == '.') {
    ++f;
    c->stride = number(f, ap);
  }
  for (; *f == 'h' || *f == 'l' || *f == 'u'; ++f) {
    c->is_short |= *f == 'h';
    c->is_long |= *f == 'l';
  }
  c->type = *f != '\0' ? *f++ : 0;
  return c->type == 'c' || c->type == 'd' || c->type == 'f' || c->type == 'x' || c->type == 's';
}

std::size_t item_size(const Conversion &c) {
  switch (c.type) {
    case 'c':
      return 1;
    case 'd':
      return c.is_short ? sizeof(short) : c.is_long ? sizeof(long) : sizeof(int);
    case 'f':
      return c.is_long ? sizeof(double) : sizeof(float);
    case 'x':
      return c.is_long ? 2 * sizeof(double) : 2 * sizeof(float);
    default:
      return 0;
  }
}

// One uncounted item passed by value, packed as its own type.
int pack_value(const Conversion &c, va_list *ap) {
  const char *call = "pvm_packf";
  if (c.type == 'c') {
    const char v = char(va_arg(*ap, int));
    return rpvm::pack_items(call, &v, 1, 1, 1);
  }
  if (c.type == 'd' && c.is_long) {
    const long v = va_arg(*ap, long);
    return rpvm::pack_items(call, &v, 1, 1, sizeof v);
  }
  if (c.type == 'd' && c.is_short) {
    const short v = short(va_arg(*ap, int));
    return rpvm::pack_items(call, &v, 1, 1, sizeof v);
  }
  if (c.type == 'd') {
    const int v = va_arg(*ap, int);
    return rpvm::pack_items(call, &v, 1, 1, sizeof v);
  }
  if (c.type == 'f' && c.is_long) {
    const double v = va_arg(*ap, double);
    return rpvm::pack_items(call, &v, 1, 1, sizeof v);
  }
  if (c.type == 'f') {
    const float v = float(va_arg(*ap, double));
    return rpvm::pack_items(call, &v, 1, 1, sizeof v);
  }
  return rpvm::pack_items(call, va_arg(*ap, void *), 1, 1, item_size(c));  // complex
}

int pack_one(const Conversion &c, va_list *ap) {
  if (c.init) return pvm_initsend(va_arg(*ap, int)) < 0 ? pvm_errno : PvmOk;
  if (c.type == 's') return rpvm::pack_string("pvm_packf", va_arg(*ap, char *));
  if (!c.counted) return pack_value(c, ap);
  return rpvm::pack_items("pvm_packf", va_arg(*ap, void *), c.count, c.stride, item_size(c));
}

int unpack_one(const Conversion &c, va_list *ap) {
  if (c.init) {
    (void)va_arg(*ap, int);
    return PvmOk;
  }
  if (c.type == 's') return rpvm::unpack_string("pvm_unpackf", va_arg(*ap, char *));
  return rpvm::unpack_items("pvm_unpackf", va_arg(*ap, void *), c.count, c.stride, item_size(c));
}

int run_format(const char *fmt, va_list *ap, bool packing) {
  if (fmt == nullptr) return rpvm::fail(PvmBadParam, packing ? "pvm_packf" : "pvm_unpackf");
  for (const char *f = fmt; *f != '\0';) {
    if (*f++ != '%') continue;
    Conversion c;
    if (!parse(f, ap, &c) && !c.init) {
      return rpvm::fail(PvmBadParam, packing ? "pvm_packf" : "pvm_unpackf");
    }
    const int rc = packing ? pack_one(c, ap) : unpack_one(c, ap);
    if (rc < 0) return rc;
  }
  return PvmOk;
}

}  // namespace

extern "C" int pvm_packf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int rc = run_format(fmt, &ap, true);
  va_end(ap);
  return rc;
}

extern "C" int pvm_unpackf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int rc = run_format(fmt, &ap, false);
  va_end(ap);
  return rc;
}
