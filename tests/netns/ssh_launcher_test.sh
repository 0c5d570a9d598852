#!/usr/bin/env bash
# ctest netns_ssh_launcher: roclrun's ssh launcher against real OpenSSH
# servers, one started inside each test host of the fixture netns_hosts
# (prefix $ROCL_NETNS_PREFIX) with a host key and a user key made for the
# test (nothing of the machine's ssh configuration is used or changed):
#   - exchange between h2 and h4 and the demo on h1..h4, launched from h1
#     through ssh, exit 0, output prefixed [host:rank];
#   - SIGTERM to roclrun: its ssh connections end, each host's agent stops
#     what it started; nothing is left in the hosts.
#   ssh_launcher_test.sh ROCLRUN EXCHANGE DEMO
set -euo pipefail

me=netns_ssh_launcher
[ $# -eq 3 ] || {
  echo "usage: $0 ROCLRUN EXCHANGE DEMO" >&2
  exit 2
}
roclrun=$1 exchange=$2 demo=$3
# shellcheck source=tests/netns/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
sshd=/usr/sbin/sshd
if [ ! -x "$sshd" ] || ! command -v ssh >/dev/null; then
  echo "$me: skipped: no OpenSSH (scripts/setup.sh installs openssh-server, openssh-client)" >&2
  exit 77
fi
work=$(mktemp -d /tmp/rocl-netns-ssh.XXXXXX)
chmod 700 "$work"
cleanup() {
  # Everything this test started runs in the hosts: the sshds, what they ran.
  local h
  for h in 1 2 3 4; do ip netns pids "$prefix-h$h" 2>/dev/null | xargs -r kill -KILL 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p /run/sshd # sshd's privilege separation directory
ssh-keygen -q -t ed25519 -N '' -f "$work/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$work/id"
cp "$work/id.pub" "$work/authorized_keys"
for h in 1 2 3 4; do
  cat >"$work/sshd_config.h$h" <<CONF
Port 22
ListenAddress 10.201.0.$h
HostKey $work/host_key
AuthorizedKeysFile $work/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $work/sshd-h$h.pid
CONF
  "$hosts" exec "h$h" -- "$sshd" -f "$work/sshd_config.h$h" -E "$work/sshd-h$h.log" ||
    fail "sshd on h$h did not start: $(cat "$work/sshd-h$h.log" 2>/dev/null)"
done
for h in 1 2 3 4; do
  for _ in $(seq 100); do [ -s "$work/sshd-h$h.pid" ] && break; sleep 0.05; done
  [ -s "$work/sshd-h$h.pid" ] || fail "sshd on h$h wrote no pid: $(cat "$work/sshd-h$h.log")"
done
export ROCL_SSH="ssh -i $work/id -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5"
from_h1() { "$hosts" exec h1 -- "$@"; }

from_h1 "$roclrun" --launcher ssh --timeout 100 --hosts h2,h4 -n 2 "$exchange" >"$work/x.out" 2>&1 ||
  fail "exchange over ssh: $(cat "$work/x.out")"
grep -q '^\[h2:0\] rank 0: exchanged 7 sizes' "$work/x.out" || fail "no [h2:0] line: $(cat "$work/x.out")"
grep -q '^\[h4:1\] rank 1: exchanged 7 sizes' "$work/x.out" || fail "no [h4:1] line: $(cat "$work/x.out")"

from_h1 "$roclrun" --launcher ssh --timeout 100 --hosts h1,h2,h3,h4 -n 4 "$demo" --quick \
  >"$work/demo.out" 2>&1 || fail "demo over ssh: $(tail -20 "$work/demo.out")"

# SIGTERM: roclrun's ssh connections go, and with them everything remote.
"$hosts" exec h1 -- "$roclrun" --launcher ssh --hosts h2,h3 -n 2 sleep 30 >"$work/i.out" 2>&1 &
sleeping() { # the job's sleeps, in h2 and h3
  { ip netns pids "$prefix-h2"; ip netns pids "$prefix-h3"; } | xargs -r ps -o args= -p |
    grep -c '^sleep 30' || true
}
for _ in $(seq 300); do [ "$(sleeping)" -ge 2 ] && break; sleep 0.1; done
[ "$(sleeping)" -ge 2 ] || fail "the sleep job did not start within 30 s: $(cat "$work/i.out")"
pkill -TERM -f -- "--launcher ssh --hosts h2,h3" || fail "no roclrun to stop"
wait || true
left() { ip netns pids "$prefix-h2"; ip netns pids "$prefix-h3"; }
# sshd itself stays; what the job started must not.
for _ in $(seq 50); do
  [ -z "$(left | xargs -r ps -o args= -p | grep -v sshd || true)" ] && break
  sleep 0.1
done
rest=$(left | xargs -r ps -o pid=,args= -p | grep -v sshd || true)
[ -z "$rest" ] || fail "left in the hosts after SIGTERM: $rest"
echo "$me: ok"
