/* Uses the installed C API: one message between two resources. */
#include <rocl/rocl.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  if (rocl_init() <= 0) return 1;
  rocl_attrl_t *attrs = rocl_new_attrl(0);
  rocl_add_attr(attrs, "type", "consumer", 8);
  int64_t a = rocl_register(attrs);
  int64_t b = rocl_register(attrs);
  rocl_kill_attrl(attrs);
  if (a <= 0 || b <= 0) return 2;
  char *p = rocl_bfget(6);
  memcpy(p, "hello", 6);
  rocl_bftoret(p);
  if (rocl_send((rocl_gid_t)a, (rocl_gid_t)b, 1, p, 6) != ROCL_OK) return 3;
  void *got = NULL;
  size_t len = 0;
  if (rocl_recv((rocl_gid_t)b, ROCL_ANY, ROCL_ANY, &got, NULL, NULL, &len, 1000) != ROCL_OK)
    return 4;
  int ok = len == 6 && strcmp((char *)got, "hello") == 0 && got == (void *)p;
  rocl_bfret(got);
  rocl_exit();
  puts(ok ? "consumer_c: ok" : "consumer_c: wrong message");
  return ok ? 0 : 5;
}
