/* packing.c - one task: every pvm_pk* / pvm_upk* type round trip through a
 * message to itself, with strides, mixed, empty and in-place buffers,
 * pvm_packf/pvm_unpackf, and the buffer calls with their error codes. */
#include <string.h>

#include "pvm_check.h"

static int me;

/* Sends the active send buffer to this task and receives it back. */
static int round_trip(int tag) {
  int bufid, bytes, rtag, rtid;
  CHECK_CODE(pvm_send(me, tag), PvmOk);
  bufid = pvm_recv(me, tag);
  CHECK(bufid > 0);
  CHECK_CODE(pvm_bufinfo(bufid, &bytes, &rtag, &rtid), PvmOk);
  CHECK(rtag == tag && rtid == me);
  return bytes;
}

static void every_type(int encoding) {
  char b[5] = {'a', 'b', 'c', 'd', 'e'}, b2[5];
  short s[3] = {-1, 2, 32767}, s2[3];
  unsigned short us[2] = {1, 65535}, us2[2];
  int i[4] = {-7, 0, 7, 2147483647}, i2[4];
  unsigned ui[2] = {1u, 4000000000u}, ui2[2];
  long l[2] = {-1L, 1L << 40}, l2[2];
  unsigned long ul[2] = {3ul, ~0ul}, ul2[2];
  float f[3] = {1.5f, -2.25f, 1e30f}, f2[3];
  double d[3] = {3.25, -1e-300, 1e300}, d2[3];
  float c[4] = {1, 2, 3, 4}, c2[4];
  double z[4] = {5, 6, 7, 8}, z2[4];
  char str[32];

  CHECK(pvm_initsend(encoding) > 0);
  CHECK_CODE(pvm_pkbyte(b, 5, 1), PvmOk);
  CHECK_CODE(pvm_pkshort(s, 3, 1), PvmOk);
  CHECK_CODE(pvm_pkushort(us, 2, 1), PvmOk);
  CHECK_CODE(pvm_pkint(i, 4, 1), PvmOk);
  CHECK_CODE(pvm_pkuint(ui, 2, 1), PvmOk);
  CHECK_CODE(pvm_pklong(l, 2, 1), PvmOk);
  CHECK_CODE(pvm_pkulong(ul, 2, 1), PvmOk);
  CHECK_CODE(pvm_pkfloat(f, 3, 1), PvmOk);
  CHECK_CODE(pvm_pkdouble(d, 3, 1), PvmOk);
  CHECK_CODE(pvm_pkcplx(c, 2, 1), PvmOk);
  CHECK_CODE(pvm_pkdcplx(z, 2, 1), PvmOk);
  if (encoding != PvmDataInPlace) CHECK_CODE(pvm_pkstr("hello, pvm"), PvmOk);
  if (encoding == PvmDataInPlace) CHECK_CODE(pvm_pkstr("x"), PvmNotImpl);
  /* In place: the bytes are read when the message is sent. */
  if (encoding == PvmDataInPlace) i[0] = 99;
  round_trip(10 + encoding);
  CHECK_CODE(pvm_upkbyte(b2, 5, 1), PvmOk);
  CHECK(memcmp(b, b2, sizeof b) == 0);
  CHECK_CODE(pvm_upkshort(s2, 3, 1), PvmOk);
  CHECK(memcmp(s, s2, sizeof s) == 0);
  CHECK_CODE(pvm_upkushort(us2, 2, 1), PvmOk);
  CHECK(memcmp(us, us2, sizeof us) == 0);
  CHECK_CODE(pvm_upkint(i2, 4, 1), PvmOk);
  CHECK(memcmp(i, i2, sizeof i) == 0);
  CHECK_CODE(pvm_upkuint(ui2, 2, 1), PvmOk);
  CHECK(memcmp(ui, ui2, sizeof ui) == 0);
  CHECK_CODE(pvm_upklong(l2, 2, 1), PvmOk);
  CHECK(memcmp(l, l2, sizeof l) == 0);
  CHECK_CODE(pvm_upkulong(ul2, 2, 1), PvmOk);
  CHECK(memcmp(ul, ul2, sizeof ul) == 0);
  CHECK_CODE(pvm_upkfloat(f2, 3, 1), PvmOk);
  CHECK(memcmp(f, f2, sizeof f) == 0);
  CHECK_CODE(pvm_upkdouble(d2, 3, 1), PvmOk);
  CHECK(memcmp(d, d2, sizeof d) == 0);
  CHECK_CODE(pvm_upkcplx(c2, 2, 1), PvmOk);
  CHECK(memcmp(c, c2, sizeof c) == 0);
  CHECK_CODE(pvm_upkdcplx(z2, 2, 1), PvmOk);
  CHECK(memcmp(z, z2, sizeof z) == 0);
  if (encoding != PvmDataInPlace) {
    CHECK_CODE(pvm_upkstr(str), PvmOk);
    CHECK(strcmp(str, "hello, pvm") == 0);
  }
  CHECK_CODE(pvm_upkbyte(b2, 1, 1), PvmNoData); /* nothing left */
}

static void strides(void) {
  int a[10], got[10], i;
  double d[6] = {0, 1, 2, 3, 4, 5}, dd[3];
  for (i = 0; i < 10; ++i) a[i] = i * i;
  CHECK(pvm_initsend(PvmDataDefault) > 0);
  CHECK_CODE(pvm_pkint(a, 5, 2), PvmOk);    /* 0 4 16 36 64 */
  CHECK_CODE(pvm_pkdouble(d, 3, 2), PvmOk); /* 0 2 4 */
  CHECK(round_trip(20) == 5 * (int)sizeof(int) + 3 * (int)sizeof(double));
  memset(got, 0, sizeof got);
  CHECK_CODE(pvm_upkint(got, 5, 2), PvmOk); /* back to every other slot */
  for (i = 0; i < 5; ++i) CHECK(got[2 * i] == a[2 * i] && got[2 * i + 1] == 0);
  CHECK_CODE(pvm_upkdouble(dd, 3, 1), PvmOk);
  CHECK(dd[0] == 0 && dd[1] == 2 && dd[2] == 4);
  CHECK_CODE(pvm_pkint(a, 1, 0), PvmBadParam);
  CHECK_CODE(pvm_pkint(a, -1, 1), PvmBadParam);
}

static void empty_and_mixed(void) {
  int n = 3, back = 0, bufid;
  char text[16];
  CHECK(pvm_initsend(PvmDataRaw) > 0);
  CHECK(round_trip(30) == 0); /* an empty message */
  CHECK_CODE(pvm_upkint(&back, 1, 1), PvmNoData);
  CHECK(pvm_initsend(PvmDataDefault) > 0);
  CHECK_CODE(pvm_pkint(&n, 0, 1), PvmOk); /* zero items */
  CHECK_CODE(pvm_pkstr(""), PvmOk);
  CHECK_CODE(pvm_pkint(&n, 1, 1), PvmOk);
  round_trip(31);
  CHECK_CODE(pvm_upkstr(text), PvmOk);
  CHECK(text[0] == '\0');
  CHECK_CODE(pvm_upkint(&back, 1, 1), PvmOk);
  CHECK(back == 3);
  /* packf / unpackf */
  {
    int arr[3] = {4, 5, 6}, arr2[3], v = 0;
    double x = 0;
    char s[16];
    short h = 0;
    CHECK_CODE(pvm_packf("%+ %d %3d %lf %s %hd", PvmDataDefault, 42, arr, 2.5, "str", 7), PvmOk);
    round_trip(32);
    CHECK_CODE(pvm_unpackf("%d %3d %lf %s %hd", &v, arr2, &x, s, &h), PvmOk);
    CHECK(v == 42 && arr2[0] == 4 && arr2[2] == 6 && x == 2.5 && strcmp(s, "str") == 0 && h == 7);
  }
  bufid = pvm_getrbuf();
  CHECK(bufid > 0);
  CHECK_CODE(pvm_freebuf(bufid), PvmOk);
  CHECK_CODE(pvm_getrbuf(), 0);
}

static void buffer_calls(void) {
  int a, b, old, x = 5, y = 0;
  a = pvm_mkbuf(PvmDataDefault);
  b = pvm_mkbuf(PvmDataRaw);
  CHECK(a > 0 && b > 0 && a != b);
  CHECK_CODE(pvm_mkbuf(77), PvmBadParam);
  CHECK_CODE(pvm_initsend(77), PvmBadParam);
  old = pvm_setsbuf(a);
  CHECK(old >= 0);
  CHECK_CODE(pvm_getsbuf(), a);
  CHECK_CODE(pvm_pkint(&x, 1, 1), PvmOk);
  /* A send buffer can be read as a receive buffer. */
  CHECK_CODE(pvm_setrbuf(a), 0);
  CHECK_CODE(pvm_upkint(&y, 1, 1), PvmOk);
  CHECK(y == 5);
  CHECK_CODE(pvm_setrbuf(0), a);
  CHECK_CODE(pvm_upkint(&y, 1, 1), PvmNoBuf);
  CHECK_CODE(pvm_setsbuf(0), a);
  CHECK_CODE(pvm_pkint(&x, 1, 1), PvmNoBuf);
  CHECK_CODE(pvm_send(me, 1), PvmNoBuf);
  CHECK_CODE(pvm_freebuf(a), PvmOk);
  CHECK_CODE(pvm_freebuf(a), PvmNoSuchBuf);
  CHECK_CODE(pvm_setsbuf(a), PvmNoSuchBuf);
  CHECK_CODE(pvm_setrbuf(12345), PvmNoSuchBuf);
  CHECK_CODE(pvm_bufinfo(12345, 0, 0, 0), PvmNoSuchBuf);
  CHECK_CODE(pvm_freebuf(-1), PvmBadParam);
  CHECK_CODE(pvm_freebuf(b), PvmOk);
  CHECK_CODE(pvm_pkstr(0), PvmBadParam);
}

int main(void) {
  me = pvm_mytid();
  CHECK(me > 0);
  CHECK_CODE(pvm_mytid(), me);
  pvm_setopt(PvmAutoErr, 0);
  every_type(PvmDataDefault);
  every_type(PvmDataRaw);
  every_type(PvmDataInPlace);
  strides();
  empty_and_mixed();
  buffer_calls();
  CHECK_CODE(pvm_exit(), PvmOk);
  printf("pvm packing: OK\n");
  return 0;
}
