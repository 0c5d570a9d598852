/* client_server.c - figure 1 of the RoCL paper in C: a server and a client,
 * here two threads of one process, each following its column of the figure
 * step by step. Build: part of the rocl tree (examples/); run: no arguments.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rocl/rocl.h"

static const char kGreeting[] = "hello, server: this is the client";

/* Prints the failed call with rocl's explanation and ends the process
 * (_Exit: the other thread may still be inside rocl). */
static void die(const char *who, const char *call, long long rc) {
  fprintf(stderr, "client_server_c: %s: %s failed with %s: %s\n", who, call, rocl_strerror((int)rc),
          rocl_last_error());
  fflush(stdout);
  _Exit(1);
}

/* A list holding the one attribute type=<value>. */
static rocl_attrl_t *type_is(const char *who, const char *value) {
  rocl_attrl_t *attrs = rocl_new_attrl(0);
  if (attrs == NULL) die(who, "rocl_new_attrl", ROCL_ENOMEM);
  int rc = rocl_add_attr(attrs, "type", value, (int)strlen(value));
  if (rc != ROCL_OK) die(who, "rocl_add_attr", rc);
  return attrs;
}

static void *server(void *arg) {
  (void)arg;
  /* 1. initialize a RoCL context */
  int64_t rc = rocl_init();
  if (rc < 0) die("server", "rocl_init", rc);

  /* 2. register resource R1 = {<type, server>}; its identifier is gid1 */
  rocl_attrl_t *attrs = type_is("server", "server");
  int64_t registered = rocl_register(attrs);
  if (registered < 0) die("server", "rocl_register", registered);
  rocl_kill_attrl(attrs);
  rocl_gid_t gid1 = (rocl_gid_t)registered;

  /* 3. wait for any message sent to gid1; the buffer pointer is msg1 */
  void *msg1 = NULL;
  rocl_gid_t from = ROCL_NULL_GID;
  int tag = 0;
  size_t len = 0;
  rc = rocl_recv(gid1, ROCL_ANY_GID, ROCL_ANY_TAG, &msg1, &from, &tag, &len, -1);
  if (rc != ROCL_OK) die("server", "rocl_recv", rc);

  /* 4. process message data through msg1 */
  printf("server: received \"%.*s\" (%zu bytes, tag %d) from resource %#llx\n", (int)len,
         (const char *)msg1, len, tag, (unsigned long long)from);

  /* 5. return buffer msg1 to the library */
  rc = rocl_bfret(msg1);
  if (rc != ROCL_OK) die("server", "rocl_bfret", rc);

  /* Not in the figure: leave the directory and drop the context reference. */
  rc = rocl_delete(gid1);
  if (rc != ROCL_OK) die("server", "rocl_delete", rc);
  rocl_exit();
  return NULL;
}

static void *client(void *arg) {
  (void)arg;
  /* 1. initialize a RoCL context */
  int64_t rc = rocl_init();
  if (rc < 0) die("client", "rocl_init", rc);

  /* 2. register resource R2 = {<type, client>}; its identifier is gid2 */
  rocl_attrl_t *attrs = type_is("client", "client");
  int64_t registered = rocl_register(attrs);
  if (registered < 0) die("client", "rocl_register", registered);
  rocl_kill_attrl(attrs);
  rocl_gid_t gid2 = (rocl_gid_t)registered;

  /* 3. discover resource {<type, server>}; its identifier is gid3. The
   *    server thread may not have registered yet: wait (5 s at most) until
   *    it has, then ask. */
  attrs = type_is("client", "server");
  rc = rocl_query_wait(attrs, 1, 5000);
  if (rc < 0) die("client", "rocl_query_wait", rc);
  rocl_gid_t gid3 = ROCL_NULL_GID;
  rc = rocl_query(&gid3, attrs);
  if (rc != ROCL_OK) die("client", "rocl_query", rc);
  rocl_kill_attrl(attrs);
  printf("client: found the server: resource %#llx\n", (unsigned long long)gid3);

  /* 4. obtain a buffer with a specific size; the pointer is msg2 */
  void *msg2 = rocl_bfget(sizeof kGreeting);
  if (msg2 == NULL) die("client", "rocl_bfget", ROCL_ENOMEM);

  /* 5. prepare message data by using msg2 */
  memcpy(msg2, kGreeting, sizeof kGreeting - 1);

  /* 6. send msg2 from gid2 to gid3 */
  rc = rocl_send(gid2, gid3, 0, msg2, sizeof kGreeting - 1);
  if (rc != ROCL_OK) die("client", "rocl_send", rc);

  /* 7. return buffer msg2 to the library. A send may use the buffer until
   *    it is SENT (in-process it already is); wait for that first. */
  const struct timespec pause = {0, 1000000}; /* 1 ms */
  while ((rc = rocl_bfstat(msg2)) == ROCL_BF_PENDING) nanosleep(&pause, NULL);
  if (rc < 0) die("client", "rocl_bfstat", rc);
  rc = rocl_bfret(msg2);
  if (rc != ROCL_OK) die("client", "rocl_bfret", rc);

  /* Not in the figure: leave the directory and drop the context reference. */
  rc = rocl_delete(gid2);
  if (rc != ROCL_OK) die("client", "rocl_delete", rc);
  rocl_exit();
  return NULL;
}

int main(void) {
  pthread_t server_thread, client_thread;
  if (pthread_create(&server_thread, NULL, server, NULL) != 0 ||
      pthread_create(&client_thread, NULL, client, NULL) != 0) {
    fprintf(stderr, "client_server_c: cannot start the threads\n");
    return 1;
  }
  pthread_join(client_thread, NULL);
  pthread_join(server_thread, NULL);
  printf("client_server_c: done\n");
  return 0;
}
