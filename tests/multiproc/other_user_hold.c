/* other_user_hold: a process of a job for other_user_test.sh to look at.
 * Under roclrun: joins the job, prints "ready pid=PID" and stays until its
 * standard input closes (at most 120 s). */
#include <rocl/rocl.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
  if (rocl_init() < 0) {
    fprintf(stderr, "other_user_hold: rocl_init: %s\n", rocl_last_error());
    return 1;
  }
  printf("ready pid=%d\n", (int)getpid());
  fflush(stdout);
  alarm(120);
  char line[64];
  while (fgets(line, sizeof line, stdin) != NULL) {
  }
  rocl_exit();
  return 0;
}
