/* mbox.c - one task: message boxes (pvm_putinfo, pvm_recvinfo,
 * pvm_delinfo, pvm_getmboxinfo) and PVM 3.3's pvm_insert / pvm_lookup /
 * pvm_delete, with their error codes. */
#include <string.h>

#include "pvm_check.h"

static void put_text(const char *name, const char *text, int flags, int expect) {
  int bufid = pvm_initsend(PvmDataDefault);
  CHECK(bufid > 0);
  CHECK_CODE(pvm_pkstr((char *)text), PvmOk);
  CHECK_CODE(pvm_putinfo((char *)name, bufid, flags), expect);
}

static void got_text(const char *expect) {
  char text[64];
  CHECK_CODE(pvm_upkstr(text), PvmOk);
  CHECK(strcmp(text, expect) == 0);
}

int main(void) {
  int me = pvm_mytid(), n = 0, i, v = 0;
  struct pvmmboxinfo *classes = 0;
  CHECK(me > 0);
  pvm_setopt(PvmAutoErr, 0);

  put_text("box-one", "first", PvmMboxDefault, 0);
  put_text("box-one", "again", PvmMboxDefault, 0); /* the owner replaces it */
  CHECK(pvm_recvinfo("box-one", 0, PvmMboxDefault) > 0);
  got_text("again");
  CHECK_CODE(pvm_recvinfo("box-one", 1, PvmMboxDefault), PvmNotFound);
  CHECK_CODE(pvm_recvinfo("no-such-box", 0, PvmMboxDefault), PvmNotFound);
  CHECK(pvm_errno == PvmNotFound);

  put_text("box-many", "zero", PvmMboxMultiInstance, 0);
  put_text("box-many", "one", PvmMboxMultiInstance, 1);
  put_text("box-many", "five", PvmMboxMultiInstance | PvmMboxDirectIndex(5), 5);
  CHECK(pvm_recvinfo("box-many", 2, PvmMboxFirstAvail) > 0);
  got_text("five");
  CHECK_CODE(pvm_delinfo("box-many", 0, 0), PvmOk);
  CHECK_CODE(pvm_delinfo("box-many", 0, 0), PvmNotFound);
  put_text("box-many", "zero again", PvmMboxMultiInstance, 0); /* the lowest free */
  CHECK(pvm_recvinfo("box-many", 1, PvmMboxReadAndDelete) > 0);
  got_text("one");
  CHECK_CODE(pvm_recvinfo("box-many", 1, 0), PvmNotFound);

  CHECK_CODE(pvm_getmboxinfo("box-*", &n, &classes), PvmOk);
  CHECK(n == 2);
  for (i = 0; i < n; ++i) {
    if (strcmp(classes[i].mi_name, "box-many") == 0) {
      CHECK(classes[i].mi_nentries == 2 && classes[i].mi_owners[0] == me);
    } else {
      CHECK(strcmp(classes[i].mi_name, "box-one") == 0 && classes[i].mi_nentries == 1);
    }
  }
  CHECK_CODE(pvm_getmboxinfo("nothing-*", &n, &classes), PvmOk);
  CHECK(n == 0);

  CHECK_CODE(pvm_insert("db", 3, 33), 3);
  CHECK_CODE(pvm_insert("db", 3, 34), PvmDupEntry);
  CHECK_CODE(pvm_insert("db", -1, 10), 0);
  CHECK_CODE(pvm_lookup("db", 3, &v), 3);
  CHECK(v == 33);
  CHECK_CODE(pvm_lookup("db", -1, &v), 0);
  CHECK(v == 10);
  CHECK_CODE(pvm_delete("db", 0), PvmOk);
  CHECK_CODE(pvm_lookup("db", 0, &v), PvmNoEntry);
  CHECK_CODE(pvm_delete("db", 0), PvmNoEntry);

  CHECK_CODE(pvm_putinfo("", 1, 0), PvmBadParam);
  CHECK_CODE(pvm_putinfo("x", 424242, 0), PvmNoSuchBuf);
  CHECK_CODE(pvm_recvinfo(0, 0, 0), PvmBadParam);
  CHECK_CODE(pvm_exit(), PvmOk);
  printf("pvm mbox: OK\n");
  return 0;
}
