/* other_user_try: what another user of the machine can reach of a job
 * (other_user_test.sh; docs/security.md, "What a local user can and cannot
 * do"). No rocl in it: it runs as a user that may not read the build.
 *
 *   other_user_try allowed|denied PID ADDRESS PATH...
 *       opens each PATH for reading (a secret file, /proc/PID/fd/N of a
 *       memfd, a shared memory object) or, for a Unix socket, connects to
 *       it; and reads one
 *       byte of process PID's memory at ADDRESS (hex) with
 *       process_vm_readv. Prints a line per attempt; exits 0 when every
 *       attempt went as expected (all allowed, or all denied), else 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

static int is_socket_path(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* 0 if the path could be used, else errno. */
static int try_path(const char *path) {
  int fd;
  if (is_socket_path(path)) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) return ENAMETOOLONG;
    strcpy(addr.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno;
    const int rc = connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0 ? 0 : errno;
    close(fd);
    return rc;
  }
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}

static int try_memory(int pid, unsigned long address) {
  char byte;
  struct iovec local = {&byte, 1}, remote = {(void *)address, 1};
  return process_vm_readv(pid, &local, 1, &remote, 1, 0) == 1 ? 0 : errno;
}

static int report(const char *what, int error, int expect_allowed) {
  const int as_expected = expect_allowed ? error == 0 : error == EACCES || error == EPERM;
  printf("%s %s: %s\n", as_expected ? "ok" : "UNEXPECTED", what,
         error == 0 ? "allowed" : strerror(error));
  return as_expected;
}

int main(int argc, char **argv) {
  if (argc < 5 || (strcmp(argv[1], "allowed") != 0 && strcmp(argv[1], "denied") != 0)) {
    fprintf(stderr, "usage: other_user_try allowed|denied PID ADDRESS PATH...\n");
    return 2;
  }
  const int expect_allowed = strcmp(argv[1], "allowed") == 0;
  const int pid = atoi(argv[2]);
  const unsigned long address = strtoul(argv[3], NULL, 16);
  int all = 1;
  for (int i = 4; i < argc; ++i) all &= report(argv[i], try_path(argv[i]), expect_allowed);
  char what[64];
  snprintf(what, sizeof what, "memory of pid %d at %lx", pid, address);
  all &= report(what, try_memory(pid, address), expect_allowed);
  return all ? 0 : 1;
}
