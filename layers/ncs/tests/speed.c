/* speed: normal-speed mode carries messages over tcp only (rocl's options
 * in force say ROCL_TRANSPORTS=tcp), high-speed mode leaves rocl its
 * transports; messages go round a ring of processes in both. Under roclrun
 * -n N. */
#include <string.h>

#include <rocl/rocl.h>

#include "ncs_check.h"

enum { kBytes = 100 * 1000 };

/* The ROCL_TRANSPORTS line of rocl's options in force. */
static void transports_in_force(char *line, size_t cap) {
  FILE *f = tmpfile();
  CHECK(f != NULL, "tmpfile");
  rocl_print_options(f);
  rewind(f);
  line[0] = '\0';
  while (fgets(line, (int)cap, f) != NULL) {
    if (strncmp(line, "ROCL_TRANSPORTS=", 16) == 0) break;
    line[0] = '\0';
  }
  fclose(f);
  CHECK(line[0] != '\0', "rocl_print_options has no ROCL_TRANSPORTS line");
}

static void ring(void *arg) {
  (void)arg;
  static unsigned char out[kBytes], in[kBytes];
  const int me = NCS_get_my_id(), n = NCS_get_num_processes();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  for (int round = 0; round < 5; ++round) {
    memset(out, me * 10 + round, sizeof out);
    CHECK_OK(NCS_send(0, me, 0, next, out, sizeof out));
    void *data = in;
    size_t size = sizeof in;
    CHECK_OK(NCS_recv(0, prev, 0, me, &data, &size));
    CHECK(size == kBytes && in[0] == prev * 10 + round && in[kBytes - 1] == in[0],
          "round %d: wrong bytes", round);
  }
}

static void run(int speed, int expect_tcp_only) {
  CHECK_OK(NCS_init_mode(NCS_FLOW_CREDIT, NCS_ERROR_TRUST, speed));
  char line[256];
  transports_in_force(line, sizeof line);
  const int tcp_only = strncmp(line, "ROCL_TRANSPORTS=tcp ", 20) == 0;
  CHECK(tcp_only == expect_tcp_only, "speed %d: %s", speed, line);
  CHECK_RC(NCS_t_create(ring, NULL, 8), 0);
  CHECK_OK(NCS_start());
  CHECK_OK(NCS_finalize());
}

int main(void) {
  unsetenv("ROCL_TRANSPORTS");
  run(NCS_SPEED_HIGH, 0);
  run(NCS_SPEED_NORMAL, 1);
  unsetenv("ROCL_TRANSPORTS");
  setenv("ROCL_NCS_SPEED", "normal", 1); /* the default mode reads it */
  CHECK_OK(NCS_init(NCS_FLOW_NONE, NCS_ERROR_TRUST));
  CHECK(getenv("ROCL_TRANSPORTS") && strcmp(getenv("ROCL_TRANSPORTS"), "tcp") == 0,
        "ROCL_NCS_SPEED=normal did not choose tcp");
  test_done("ncs speed");
  return 0;
}
