# SPDX-License-Identifier: Apache-2.0
"""Barrier and all-reduce across "hosts": every rank runs in its own network
namespace, whose only interface besides lo is a veth joined to a Linux
bridge in the root namespace, and the ranks meet through a Redis server
that this module starts on the bridge's address.

    root namespace:  bridge 10.213.X.1/24 ── redis-server
                       │ veth      │ veth      ...
    namespace i:     eth0 10.213.X.(10+i)/24, lo

A rank can reach its peers and the store only across the bridge, so these
tests show what the one-host tests (test_collectives.py, loopback and a
FileStore) cannot: rendezvous through Redis, ranks listening on their own
host's address (MLOS_COLLECTIVE_IFACE), and a network partition, where a
peer stays alive but its packets stop.

Needs root (CAP_NET_ADMIN), iproute2's `ip` and `redis-server`; without
them every test is skipped with the reason.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field

import pytest

from conftest import build_dir
from test_collectives import DTYPES, ERR_INVALID_ARGUMENT, ERR_IO, ERR_PEER_LOST, ERR_TIMEOUT, expected, lines, typed_expected

MAX_HOSTS = 4
LOOP_TIMEOUT_MS = 3000  # MLOS_COLLECTIVE_TIMEOUT_MS of the failure tests
# How much later than the timeout a failure may be reported. These tests
# tell "ends with an error" from "hangs", not how fast: the bound is wide
# enough for a loaded machine (a rank process starting under stress-ng
# missed 2 s), and a hang never ends.
MARGIN_MS = 15000


def sh(*argv, check=True, timeout=30):
    """Runs a command (ip, mostly); CalledProcessError carries its stderr."""
    return subprocess.run(argv, check=check, capture_output=True, text=True, timeout=timeout)


def rank_program():
    path = build_dir() / "bin" / "mlos_collective_rank"
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"{path} not found: build the mlos_collective_rank target, or set MLOS_BUILD_DIR")
    return str(path)


def free_port(addr):
    """A TCP port nobody listens on at addr, right now."""
    with socket.socket() as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


def redis_answers(addr, port):
    try:
        with socket.create_connection((addr, port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def unused_subnet():
    """An X such that 10.213.X.0/24 appears nowhere in the root namespace's
    routes, starting from one derived from our pid."""
    routes = sh("ip", "-4", "route", "show", "table", "all").stdout
    for k in range(250):
        x = (os.getpid() + k) % 250 + 1
        if f"10.213.{x}." not in routes:
            return x
    pytest.skip("no free 10.213.X.0/24 subnet for the test bridge")


@dataclass
class Host:
    netns: str
    addr: str
    veth: str  # the outer end, on the bridge, in the root namespace


@dataclass
class Network:
    bridge: str
    bridge_addr: str
    redis_port: int
    hosts: list = field(default_factory=list)

    @property
    def store(self):
        return f"redis://{self.bridge_addr}:{self.redis_port}"


def stop(server, log):
    server.terminate()
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    log.close()


def check_prerequisites():
    if os.geteuid() != 0:
        pytest.skip("needs root (CAP_NET_ADMIN) for network namespaces, veths and a bridge")
    for tool, package in (("ip", "iproute2"), ("redis-server", "redis-server")):
        if not shutil.which(tool):
            pytest.skip(f"`{tool}` not found (Debian package {package})")


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    """MAX_HOSTS namespaces on a bridge and a Redis server on the bridge's
    address. Names carry our pid so parallel runs do not collide; teardown
    removes all of it, whatever happened in between."""
    check_prerequisites()
    pid = os.getpid()
    undo = []  # cleanup steps, run in reverse
    try:
        x = unused_subnet()
        net = Network(bridge=f"mlmh{pid}", bridge_addr=f"10.213.{x}.1", redis_port=0)
        r = sh("ip", "link", "add", net.bridge, "type", "bridge", check=False)
        if r.returncode != 0:
            pytest.skip(f"cannot create a bridge (`ip link add type bridge`): {r.stderr.strip()}")
        undo.append(("ip", "link", "del", net.bridge))
        sh("ip", "addr", "add", f"{net.bridge_addr}/24", "dev", net.bridge)
        sh("ip", "link", "set", net.bridge, "up")

        for i in range(MAX_HOSTS):
            h = Host(netns=f"mlos-mh-{pid}-{i}", addr=f"10.213.{x}.{10 + i}", veth=f"mlmh{pid}v{i}")
            inner = f"mlmh{pid}i{i}"
            r = sh("ip", "netns", "add", h.netns, check=False)
            if r.returncode != 0:
                pytest.skip(f"cannot create a network namespace (`ip netns add`): {r.stderr.strip()}")
            undo.append(("ip", "netns", "del", h.netns))
            r = sh("ip", "link", "add", h.veth, "type", "veth", "peer", "name", inner, check=False)
            if r.returncode != 0:
                pytest.skip(f"cannot create a veth pair (`ip link add type veth`): {r.stderr.strip()}")
            # Deleting one end deletes the pair; deleting the namespace alone
            # would only do so asynchronously.
            undo.append(("ip", "link", "del", h.veth))
            sh("ip", "link", "set", inner, "netns", h.netns)
            sh("ip", "-n", h.netns, "link", "set", inner, "name", "eth0")
            sh("ip", "-n", h.netns, "addr", "add", f"{h.addr}/24", "dev", "eth0")
            sh("ip", "-n", h.netns, "link", "set", "lo", "up")
            sh("ip", "-n", h.netns, "link", "set", "eth0", "up")
            sh("ip", "link", "set", h.veth, "master", net.bridge)
            sh("ip", "link", "set", h.veth, "up")
            net.hosts.append(h)

        net.redis_port = free_port(net.bridge_addr)
        log = open(tmp_path_factory.mktemp("redis") / "redis.log", "w")
        redis = subprocess.Popen(
            ["redis-server", "--port", str(net.redis_port), "--bind", net.bridge_addr, "--save", "",
             "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        undo.append(lambda: stop(redis, log))
        deadline = time.monotonic() + 10
        while not redis_answers(net.bridge_addr, net.redis_port):
            if redis.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"redis-server on {net.store} did not answer PING; see {log.name}")
            time.sleep(0.05)
        yield net
    finally:
        for step in reversed(undo):  # each one, even if another fails
            try:
                if callable(step):
                    step()
                else:
                    sh(*step, check=False)
            except Exception as e:  # noqa: BLE001 - teardown must go on
                print(f"teardown step {step!r} failed: {e}")


@pytest.fixture
def ranks(net, request, tmp_path):
    """Starts ranks inside the namespaces; kills whatever is left at the end.
    Each test gets its own MLOS_GROUP, so keys never collide in the shared
    store."""
    binary = rank_program()
    group = f"mh-{os.getpid()}-{request.node.name}".replace("/", "_").replace(" ", "_")
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    procs = []

    def start(host, rank, world, mode, **extra):
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLOS_") and k not in ("RANK", "WORLD_SIZE")}
        env.update(RANK=str(rank), WORLD_SIZE=str(world), MLOS_STORE=net.store, MLOS_GROUP=group,
                   MLOS_RUNTIME_DIR=str(runtime), MLOS_MODE="embedded", MLOS_COLLECTIVE_IFACE="eth0",
                   MLOS_COLLECTIVE_TIMEOUT_MS="10000")
        env.update({k: str(v) for k, v in extra.items()})
        # `ip netns exec` execs the program: the Popen's pid is the rank's.
        p = subprocess.Popen(["ip", "netns", "exec", host.netns, binary, mode], env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.communicate()


def run_world(start, net, world, mode, timeout=120):
    """Rank r on host r; the outputs once all have exited successfully."""
    procs = [start(net.hosts[r], r, world, mode) for r in range(world)]
    outs = [p.communicate(timeout=timeout)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * world, outs
    results = [lines(o) for o in outs]
    assert all(r == results[0] for r in results), "ranks disagree"
    return results[0]


def start_loop(start, net, world):
    """world ranks all-reducing in a loop, past their first all-reduce."""
    procs = [start(net.hosts[r], r, world, "loop", MLOS_COLLECTIVE_TIMEOUT_MS=LOOP_TIMEOUT_MS)
             for r in range(world)]
    for p in procs:
        ready = p.stdout.readline()
        assert '"ready"' in ready, ready + p.stdout.read()
    time.sleep(0.2)
    return procs


def failure_of(p, since_ns):
    """The error a looping rank ended with, and how long after since_ns."""
    out = p.communicate(timeout=LOOP_TIMEOUT_MS / 1000 + 30)[0]
    assert p.returncode == 3, out
    err = lines(out)[-1]
    return err, (err["t_ns"] - since_ns) / 1e6


def in_netns(host, code, timeout=10):
    """Runs a Python snippet inside host's namespace."""
    return subprocess.run(["ip", "netns", "exec", host.netns, sys.executable, "-c", code],
                          capture_output=True, text=True, timeout=timeout)


def test_each_namespace_is_a_host_reached_only_across_the_bridge(net):
    """Every namespace holds only lo and its own address, so ranks cannot
    take a shortcut through a shared interface; yet a TCP connection from
    one namespace to another, and to Redis, goes through (across the
    bridge)."""
    for h in net.hosts:
        links = json.loads(sh("ip", "-n", h.netns, "-j", "addr", "show").stdout)
        assert sorted(link["ifname"] for link in links) == ["eth0", "lo"], links
        v4 = sorted(a["local"] for link in links for a in link["addr_info"] if a["family"] == "inet")
        assert v4 == sorted(["127.0.0.1", h.addr]), links
    a, b = net.hosts[0], net.hosts[1]
    listener = subprocess.Popen(
        ["ip", "netns", "exec", b.netns, sys.executable, "-c",
         "import socket; s = socket.create_server(('%s', 0)); print(s.getsockname()[1], flush=True);"
         "c, _ = s.accept(); c.sendall(b'pong')" % b.addr],
        stdout=subprocess.PIPE, text=True)
    try:
        port = int(listener.stdout.readline())
        r = in_netns(a, "import socket; print(socket.create_connection(('%s', %d), timeout=5).recv(4).decode())"
                     % (b.addr, port))
        assert r.stdout.strip() == "pong", r.stderr
    finally:
        listener.kill()
        listener.wait()
    r = in_netns(a, "import socket; s = socket.create_connection(('%s', %d), timeout=5); s.sendall(b'PING\\r\\n');"
                    "print(s.recv(16).decode().strip())" % (net.bridge_addr, net.redis_port))
    assert r.stdout.strip() == "+PONG", r.stderr


@pytest.mark.parametrize("world", [2, 4])
def test_every_op_gives_the_reference_result_on_every_host(net, ranks, world):
    """Rendezvous through Redis and Gloo's TCP pairs between namespaces
    (each rank listening on its own eth0): every op over 0..65537 elements
    matches the reference on every rank."""
    results = run_world(ranks, net, world, "check")
    assert len(results) == 5 * 5
    for case in results:
        ref = expected(case["op"], case["count"], world)
        assert case["sum"] == pytest.approx(sum(ref), rel=1e-5), case
        assert case["first"] == pytest.approx(ref[:5], rel=1e-6), case
        assert case["last"] == pytest.approx(ref[-1] if ref else 0, rel=1e-6), case


def test_typed_allreduce_for_every_dtype_and_op_across_hosts(net, ranks):
    """The typed all-reduce (every dtype and op) gives the reference result
    on 3 hosts."""
    world = 3
    results = run_world(ranks, net, world, "typed")
    assert len(results) == 6 * 5 * 4
    for case in results:
        ref = typed_expected(case["dtype"], case["op"], case["count"], world)
        name, rel = DTYPES[case["dtype"]]
        assert case["first"] == pytest.approx(ref[:5], rel=rel, abs=rel), (name, case)
        assert case["sum"] == pytest.approx(sum(ref), rel=rel, abs=rel), (name, case)


def test_a_host_killed_mid_loop_fails_the_others_within_the_timeout(net, ranks):
    """A rank SIGKILLed while the group all-reduces: its kernel closes its
    connections across the bridge, and the survivors fail with PEER_LOST
    (or TIMEOUT) within the timeout instead of hanging."""
    procs = start_loop(ranks, net, 3)
    killed_ns = time.monotonic_ns()
    procs[2].send_signal(signal.SIGKILL)
    procs[2].wait(10)
    for r, p in enumerate(procs[:2]):
        err, delay_ms = failure_of(p, killed_ns)
        assert err["code"] in (ERR_PEER_LOST, ERR_TIMEOUT), err
        assert delay_ms < LOOP_TIMEOUT_MS + MARGIN_MS, delay_ms
        print(f"rank {r} saw {err['code']} {delay_ms:.0f} ms after the kill: {err['message'][:160]}")


def test_a_network_partition_mid_loop_is_a_timeout_on_every_side(net, ranks):
    """The bridge port of one host goes down while the group all-reduces:
    nobody dies and no connection is closed, packets just stop. The
    survivors and the cut-off rank itself must all fail with TIMEOUT or
    PEER_LOST within the timeout (plus a margin) and exit, not hang. Only
    a multi-host setup can show this; on one host a peer that stops
    answering is also a peer that is gone."""
    procs = start_loop(ranks, net, 3)
    cut = net.hosts[2]
    try:
        sh("ip", "link", "set", cut.veth, "down")
        cut_ns = time.monotonic_ns()
        for r, p in enumerate(procs):
            err, delay_ms = failure_of(p, cut_ns)
            side = "partitioned" if r == 2 else "survivor"
            print(f"rank {r} ({side}) saw {err['code']} {delay_ms:.0f} ms after the link went down "
                  f"(timeout {LOOP_TIMEOUT_MS} ms): {err['message'][:160]}")
            assert err["code"] in (ERR_PEER_LOST, ERR_TIMEOUT), err
            assert delay_ms < LOOP_TIMEOUT_MS + MARGIN_MS, (r, delay_ms)
    finally:
        sh("ip", "link", "set", cut.veth, "up")


def run_alone(ranks, host, store, timeout_ms):
    """Rank 0 of 2 against store; its error and how long it took to exit."""
    t0 = time.monotonic()
    p = ranks(host, 0, 2, "check", MLOS_STORE=store, MLOS_COLLECTIVE_TIMEOUT_MS=timeout_ms)
    out = p.communicate(timeout=timeout_ms / 1000 + 30)[0]
    waited_ms = (time.monotonic() - t0) * 1000
    assert p.returncode == 3, out
    return lines(out)[-1], waited_ms


def test_an_unreachable_redis_is_a_prompt_error_not_a_hang(net, ranks):
    """MLOS_STORE naming a port where nothing listens (refused at once), or
    an address on the bridge's subnet that nobody holds (no answer at all):
    the rank's first collective fails with an error about Redis, well
    within the timeout."""
    timeout_ms = 5000
    refused = f"redis://{net.bridge_addr}:{free_port(net.bridge_addr)}"
    err, waited_ms = run_alone(ranks, net.hosts[0], refused, timeout_ms)
    print(f"{refused} (refused): code {err['code']} after {waited_ms:.0f} ms: {err['message']}")
    # An unreachable store is an I/O error naming it, not a lost peer.
    assert err["code"] == ERR_IO, err
    assert "refused" in err["message"] and refused in err["message"], err
    assert waited_ms < 3000, waited_ms

    nobody = f"redis://{net.bridge_addr.rsplit('.', 1)[0]}.250:6379"
    err, waited_ms = run_alone(ranks, net.hosts[0], nobody, timeout_ms)
    print(f"{nobody} (no answer): code {err['code']} after {waited_ms:.0f} ms: {err['message']}")
    assert err["code"] == ERR_TIMEOUT, err
    assert "Redis" in err["message"], err
    assert waited_ms < timeout_ms + MARGIN_MS, waited_ms


def test_a_redis_that_never_answers_is_a_timeout_not_a_hang(net, ranks):
    """A store that accepts connections but never replies (a listening
    socket nobody reads, like a SIGSTOPped redis-server): the rendezvous
    must still end with TIMEOUT within the timeout."""
    timeout_ms = 2000
    with socket.create_server((net.bridge_addr, 0)) as mute:
        p = ranks(net.hosts[0], 0, 2, "check", MLOS_STORE=f"redis://{net.bridge_addr}:{mute.getsockname()[1]}",
                  MLOS_COLLECTIVE_TIMEOUT_MS=timeout_ms)
        try:
            out = p.communicate(timeout=(timeout_ms + MARGIN_MS + 1000) / 1000)[0]
        except subprocess.TimeoutExpired:
            pytest.fail(f"rank still blocked {timeout_ms + MARGIN_MS + 1000} ms into a {timeout_ms} ms timeout")
    assert p.returncode == 3, out
    assert lines(out)[-1]["code"] == ERR_TIMEOUT, out


def test_a_rank_number_given_twice_is_refused_by_name(net, ranks):
    """Two hosts both told they are rank 1 of 2: Redis refuses to overwrite
    the first one's key, so the second gets INVALID_ARGUMENT saying the rank
    is taken, at once, instead of a confused rendezvous."""
    first = ranks(net.hosts[0], 1, 2, "check", MLOS_COLLECTIVE_TIMEOUT_MS=2000)
    time.sleep(0.3)
    second = ranks(net.hosts[1], 1, 2, "check", MLOS_COLLECTIVE_TIMEOUT_MS=2000)
    errors = [lines(p.communicate(timeout=30)[0])[-1] for p in (first, second)]
    assert errors[1]["code"] == ERR_INVALID_ARGUMENT and "already taken" in errors[1]["message"], errors
    assert errors[0]["code"] == ERR_TIMEOUT, errors  # rank 0 never came
