#!/usr/bin/env bash
# The network router against a direct connection, in one run: connection
# setup time (connect, send a request, first byte back; median of 200 per
# round) and the throughput of a 1 GiB transfer per round, from a client network namespace to a
# server namespace this script makes (a veth pair, 10.231.250.0/24), once
# directly and twice from inside `chock exec` through the router: as a program
# connects (the direct path, where the kernel has it) and from sockets bound
# before they connect (which the relay carries). Needs root,
# iproute2, nftables, python3 and a release build (cargo build --release -p chock).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
chock=${CHOCK:-$root/target/release/chock}
lab=$(mktemp -d)
server_ns=chock-bench-s-$$ client_ns=chock-bench-c-$$
cleanup() {
  [[ -n ${servers:-} ]] && kill "$servers" 2>/dev/null || true
  ip netns del "$server_ns" 2>/dev/null || true
  ip netns del "$client_ns" 2>/dev/null || true
  rm -rf "$lab"
}
trap cleanup EXIT
ip netns add "$server_ns"
ip netns add "$client_ns"
ip link add chkbc$$ type veth peer name chkbs$$
ip link set chkbc$$ netns "$client_ns"
ip link set chkbs$$ netns "$server_ns"
ip -n "$client_ns" addr add 10.231.250.1/24 dev chkbc$$
ip -n "$server_ns" addr add 10.231.250.2/24 dev chkbs$$
for ns in "$client_ns" "$server_ns"; do
  ip -n "$ns" link set lo up
done
ip -n "$client_ns" link set chkbc$$ up
ip -n "$server_ns" link set chkbs$$ up
cd "$lab"
openssl req -x509 -newkey rsa:2048 -nodes -keyout srv.key -out srv.crt -subj /CN=allowed.test -days 1 2>/dev/null
ip netns exec "$server_ns" /usr/bin/python3 "$root/rust/cli/tests/net_lab/servers.py" \
  10.231.250.2 "$lab/log" srv.crt srv.key allowed.test=10.231.250.2 > "$lab/ready" &
servers=$!
for _ in $(seq 50); do grep -q ready "$lab/ready" 2>/dev/null && break; sleep 0.1; done

mkdir -p project home
cat > project/chock.zon <<'ZON'
.{ .policy = .{ .rules = .{
    .{ .action = "exec.*", .decision = .allow },
    .{ .action = "net.connect.test.allowed.*", .decision = .allow },
} } }
ZON
cat > project/measure.py <<'PY'
import resource, socket, struct, sys, time
host = socket.getaddrinfo(sys.argv[1], 8080, socket.AF_INET)[0][4][0]
rounds, size = 200, 1 << 30
# "bound": each socket is bound before it connects, so the relay carries it.
source = ("0.0.0.0", 0) if sys.argv[2:] == ["bound"] else None
times = []
for _ in range(rounds):
    began = time.perf_counter()
    s = socket.create_connection((host, 8080), timeout=10, source_address=source)
    s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    s.recv(1)
    times.append(time.perf_counter() - began)
    s.close()
times.sort()
s = socket.create_connection((host, 9000), timeout=30, source_address=source)
s.sendall(struct.pack("!Q", size))
buffer = bytearray(1 << 20)
got, began = 0, time.perf_counter()
while got < size:
    n = s.recv_into(buffer)
    if not n:
        break
    got += n
took = time.perf_counter() - began
used = resource.getrusage(resource.RUSAGE_SELF)
print(f"{times[len(times) // 2] * 1000:.3f} {got / took / (1 << 20):.0f} {got} {used.ru_utime + used.ru_stime:.2f}")
PY
# Runs a command and appends the processor time it and its children used
# (user + system, seconds) to its last line of output: for the router, the
# whole `chock exec` (its start, the relay's threads and the program) at once.
cat > project/cpu.py <<'PY'
import resource, subprocess, sys
out = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{out} {used.ru_utime + used.ru_stime:.2f}")
PY
export HOME=$lab/home XDG_DATA_HOME=$lab/home/d XDG_STATE_HOME=$lab/home/s XDG_CONFIG_HOME=$lab/home/c
export CHOCK_NET_RESOLVER=10.231.250.2:53
cd project
# Five rounds taking turns (the machine is shared, so one pair of runs can
# catch a burst of load); each figure is the median of its five.
: > direct.txt
: > router.txt
: > relay.txt
for _ in 1 2 3 4 5; do
  nsenter --net=/run/netns/"$client_ns" /usr/bin/python3 measure.py 10.231.250.2 >> direct.txt
  nsenter --net=/run/netns/"$client_ns" /usr/bin/python3 cpu.py "$chock" exec -- /usr/bin/python3 measure.py allowed.test >> router.txt
  nsenter --net=/run/netns/"$client_ns" /usr/bin/python3 cpu.py "$chock" exec -- /usr/bin/python3 measure.py allowed.test bound >> relay.txt
done
median() { sort -n | sed -n 3p; }
d_setup=$(cut -d' ' -f1 direct.txt | median); d_rate=$(cut -d' ' -f2 direct.txt | median)
r_setup=$(cut -d' ' -f1 router.txt | median); r_rate=$(cut -d' ' -f2 router.txt | median)
l_setup=$(cut -d' ' -f1 relay.txt | median); l_rate=$(cut -d' ' -f2 relay.txt | median)
# Processor time: the client program's own (fourth field) and, through the
# router, the whole `chock exec`'s (fifth: its start, relay and program).
d_cpu=$(cut -d' ' -f4 direct.txt | median); r_cpu=$(cut -d' ' -f5 router.txt | median)
r_prog=$(cut -d' ' -f4 router.txt | median); l_cpu=$(cut -d' ' -f5 relay.txt | median)
d_got=$(cut -d' ' -f3 direct.txt | sort -u | tr '\n' ' '); r_got=$(cut -d' ' -f3 router.txt relay.txt | sort -u | tr '\n' ' ')
# What a router adds to a command's start: `chock exec -- /bin/true` with
# `.router = .none` and `.filtered`, taking turns, median of 20 each.
start_ms() {
  python3 - "$chock" <<'PY'
import subprocess, sys, time, pathlib
zon = pathlib.Path("chock.zon")
rules = '.rules = .{ .{ .action = "exec.*", .decision = .allow } }'
times = {"none": [], "filtered": []}
for _ in range(20):
    for mode in times:
        zon.write_text(f".{{ .policy = .{{ .net = .{{ .router = .{mode} }}, {rules} }} }}\n")
        began = time.perf_counter()
        subprocess.run([sys.argv[1], "exec", "--", "/bin/true"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times[mode].append(time.perf_counter() - began)
for mode in times:
    times[mode].sort()
print(f"{times['none'][10] * 1000:.1f} {times['filtered'][10] * 1000:.1f}")
PY
}
cp chock.zon chock.zon.bench
read -r s_none s_router < <(nsenter --net=/run/netns/"$client_ns" bash -c "$(declare -f start_ms); chock=$chock; start_ms")
mv chock.zon.bench chock.zon
ratio() { python3 -c "print(f'{$1/$2:.2f}')"; }
echo "| measure | direct | router | router / direct | relay (bound sockets) | relay / direct |"
echo "|---|---|---|---|---|---|"
echo "| connection setup, median of 200, median of 5 rounds (ms) | $d_setup | $r_setup | $(ratio "$r_setup" "$d_setup") | $l_setup | $(ratio "$l_setup" "$d_setup") |"
echo "| 1 GiB transfer, median of 5 rounds (MiB/s) | $d_rate | $r_rate | $(ratio "$r_rate" "$d_rate") | $l_rate | $(ratio "$l_rate" "$d_rate") |"
echo "| processor time of the receiving side, median of 5 rounds (s) | $d_cpu (client) | $r_cpu (client $r_prog; the rest chock's) | $(ratio "$r_cpu" "$d_cpu") | $l_cpu | $(ratio "$l_cpu" "$d_cpu") |"
echo "| \`chock exec -- /bin/true\`, median of 20 (ms) | $s_none (no router) | $s_router | $(ratio "$s_router" "$s_none") | | |"
echo "(bytes received: direct $d_got, router $r_got; load average $(cut -d' ' -f1 /proc/loadavg))"
