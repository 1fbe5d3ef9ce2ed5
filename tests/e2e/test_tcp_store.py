# SPDX-License-Identifier: Apache-2.0
"""C ranks (tests/collectives/collective_rank.c) meeting at torch's
TCPStore, whose protocol libmlos speaks itself: at a real torch server,
with a key the ranks wrote read back through torch; at the server rank 0
starts from MASTER_ADDR/MASTER_PORT, used by a real torch client; clear
errors for an address where nothing, or something else, answers; hostile
bytes that do not bring our server down.

torch comes from this interpreter when it has it, else from /opt/mlos/venv
(MLOS_VENV), run as a subprocess; the tests that need it skip without."""
import json
import os
import socket
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import build_dir

ERR_INVALID_ARGUMENT, ERR_TIMEOUT, ERR_IO = -1, -17, -19
VALIDATE, PING = b"\x00", b"\x0d"
MAGIC = struct.pack("<I", 0x3C85F7CE)
RANK_TIMEOUT_MS = 20000  # generous: a busy 2-core machine is slow, never wrong


def python_with_torch():
    candidates = [sys.executable, str(Path(os.environ.get("MLOS_VENV", "/opt/mlos/venv")) / "bin" / "python")]
    for python in candidates:
        if Path(python).exists() and subprocess.run([python, "-c", "import torch.distributed"],
                                                    capture_output=True, timeout=120).returncode == 0:
            return python
    return None


@pytest.fixture(scope="module")
def torch_python():
    python = python_with_torch()
    if python is None:
        pytest.skip("no Python with torch here or in MLOS_VENV (/opt/mlos/venv)")
    return python


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_env(tmp_path, rank, world, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MLOS_", "MASTER_", "TORCHELASTIC_")) and k not in ("RANK", "WORLD_SIZE")}
    env.update(RANK=str(rank), WORLD_SIZE=str(world), MLOS_RUNTIME_DIR=str(tmp_path / "runtime"),
               MLOS_MODE="embedded", MLOS_COLLECTIVE_HOST="127.0.0.1",
               MLOS_COLLECTIVE_TIMEOUT_MS=str(RANK_TIMEOUT_MS))
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start(tmp_path, rank, world, **extra):
    """A C rank doing a barrier and all-reduces of every op ("check")."""
    return start_mode(tmp_path, rank, world, "check", **extra)


def start_mode(tmp_path, rank, world, mode, **extra):
    """A C rank of tests/collectives/collective_rank.c in `mode`."""
    (tmp_path / "runtime").mkdir(exist_ok=True)
    return subprocess.Popen([str(build_dir() / "bin" / "mlos_collective_rank"), mode],
                            env=rank_env(tmp_path, rank, world, **extra), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def lines(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def finish(procs):
    """Every rank exits 0 and they all hold the same all-reduce results."""
    outs = [p.communicate(timeout=180)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * len(procs), outs
    results = [lines(o) for o in outs]
    assert results[0] and all(r == results[0] for r in results), outs
    world = len(procs)
    # SUM of 7 elements: element i of rank r is (r+1) + (i%5)*0.5 (collective_rank.c's fill).
    case = next(c for c in results[0] if c["op"] == 0 and c["count"] == 7)
    assert case["sum"] == pytest.approx(sum((r + 1) + (i % 5) * 0.5 for r in range(world) for i in range(7)))


def serves_tcpstore(port, deadline):
    """Whether a TCPStore answers VALIDATE+PING at 127.0.0.1:port before
    the deadline (retrying while nothing listens)."""
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(VALIDATE + MAGIC + PING + struct.pack("<I", 4242))
                if s.recv(4) == struct.pack("<I", 4242):
                    return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


TORCH_SERVER = textwrap.dedent("""
    import datetime, sys
    import torch.distributed as dist
    s = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                      timeout=datetime.timedelta(seconds=120))
    print(s.port, s.libuvBackend, flush=True)
    for line in sys.stdin:  # each line a key to read (waiting for it), answered on one line
        print(s.get(line.strip()).decode(), flush=True)
""")


def test_c_ranks_meet_at_a_torch_tcpstore_and_torch_reads_their_keys(tmp_path, torch_python):
    server = subprocess.Popen([torch_python, "-c", TORCH_SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        port, libuv = server.stdout.readline().split()
        assert libuv == "True"  # torch's default server, the one a torchrun agent runs
        procs = [start(tmp_path, r, 2, MLOS_STORE=f"tcp://127.0.0.1:{port}", MLOS_GROUP="tcpjob")
                 for r in range(2)]
        finish(procs)
        # Each rank published its world size under the group's prefix and
        # generation; torch's store sees the same key names.
        for r in range(2):
            server.stdin.write(f"tcpjob/0/world_size/{r}\n")
            server.stdin.flush()
            assert server.stdout.readline().strip() == "2"
    finally:
        server.kill()
        server.wait(30)


TORCH_CLIENT = textwrap.dedent("""
    import datetime, json, sys, threading
    import torch.distributed as dist
    port = int(sys.argv[1])
    def client():
        return dist.TCPStore("127.0.0.1", port, is_master=False, wait_for_workers=False,
                             timeout=datetime.timedelta(seconds=60))
    s, other = client(), client()
    out = {}
    s.set("py/key", b"hello")
    out["get"] = other.get("py/key").decode()
    out["add"] = [s.add("py/n", 3), other.add("py/n", 4)]
    out["check"] = [s.check(["py/key", "py/n"]), s.check(["py/absent"])]
    late = {}
    t = threading.Thread(target=lambda: late.update(v=other.get("py/late").decode()))
    t.start()
    s.set("py/late", b"woken")
    t.join()
    out["late"] = late["v"]
    s.wait(["py/key", "py/late"])
    try:
        s.wait(["py/absent"], datetime.timedelta(milliseconds=200))
        out["wait_timeout"] = None
    except Exception as e:
        out["wait_timeout"] = str(e)
    out["after_timeout"] = s.get("py/key").decode()
    out["cas"] = [s.compare_set("py/key", b"hello", b"bye").decode(),
                  s.compare_set("py/key", b"hello", b"again").decode(),
                  s.compare_set("py/fresh", b"", b"new").decode()]
    s.append("py/log", b"a")
    s.append("py/log", b"b")
    out["append"] = s.get("py/log").decode()
    s.multi_set(["py/m1", "py/m2"], [b"1", b"2"])
    out["multi_get"] = [v.decode() for v in other.multi_get(["py/m1", "py/m2"])]
    out["deleted"] = [s.delete_key("py/m2"), s.delete_key("py/m2")]
    s.queue_push("py/q", b"first")
    out["queue"] = [s.queue_len("py/q"), other.queue_pop("py/q").decode(), s.queue_len("py/q")]
    b = threading.Thread(target=lambda: other.barrier("py/barrier", 2))
    b.start()
    s.barrier("py/barrier", 2)
    b.join()
    out["barrier"] = True
    # Written by C rank 0 (prefix "mlos", generation 0) while it waits for rank 1.
    out["rank0_world_size"] = s.get("mlos/0/world_size/0").decode()
    out["keys"] = sorted(s.list_keys())
    out["num_keys"] = s.num_keys()
    print(json.dumps(out))
""")


def test_a_torch_client_uses_the_store_rank_zero_serves(tmp_path, torch_python):
    port = free_port()
    rank0 = start(tmp_path, 0, 2, MASTER_ADDR="127.0.0.1", MASTER_PORT=port)  # nobody serves: rank 0 does
    try:
        py = subprocess.run([torch_python, "-c", TORCH_CLIENT, str(port)], capture_output=True, text=True,
                            timeout=180)
        assert py.returncode == 0, py.stderr
        out = json.loads(py.stdout.splitlines()[-1])
        assert out["get"] == "hello"
        assert out["add"] == [3, 7]
        assert out["check"] == [True, False]
        assert out["late"] == "woken"
        assert out["wait_timeout"] and "timeout" in out["wait_timeout"].lower(), out
        assert out["after_timeout"] == "hello"  # the cancelled wait left the connection usable
        assert out["cas"] == ["bye", "bye", "new"]
        assert out["append"] == "ab"
        assert out["multi_get"] == ["1", "2"]
        assert out["deleted"] == [True, False]
        assert out["queue"] == [1, "first", 0]
        assert out["barrier"] is True
        assert out["rank0_world_size"] == "2"
        assert {"py/key", "py/n", "py/late", "py/log", "py/m1", "mlos/0/world_size/0"} <= set(out["keys"])
        assert out["num_keys"] == len(out["keys"])
        finish([rank0, start(tmp_path, 1, 2, MASTER_ADDR="127.0.0.1", MASTER_PORT=port)])
    finally:
        rank0.kill()
        rank0.wait(30)


def test_c_ranks_under_torchrun_meet_at_the_agents_store(tmp_path, torch_python):
    """torchrun serves the store in its agent and tells the workers
    (TORCHELASTIC_USE_AGENT_STORE=True, MASTER_ADDR/MASTER_PORT): the C
    ranks find it with no MLOS_STORE at all."""
    (tmp_path / "runtime").mkdir()
    env = rank_env(tmp_path, 0, 1)
    for k in ("RANK", "WORLD_SIZE"):
        del env[k]
    run = subprocess.run([torch_python, "-m", "torch.distributed.run", "--nproc_per_node=2", "--standalone",
                          "--no-python", str(build_dir() / "bin" / "mlos_collective_rank"), "check"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    cases = lines(run.stdout)  # both ranks' lines, interleaved
    assert len(cases) == 2 * 25, run.stdout
    by_case = {}
    for c in cases:
        by_case.setdefault((c["op"], c["count"]), []).append(c)
    assert all(len(v) == 2 and v[0] == v[1] for v in by_case.values()), by_case


def test_ranks_that_arrive_before_rank_zero_listens_wait_for_it(tmp_path):
    port = free_port()
    env = dict(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    early = [start(tmp_path, r, 3, **env) for r in (1, 2)]
    time.sleep(0.5)  # not an assertion: makes it likely they were refused a few times first
    finish([start(tmp_path, 0, 3, **env), *early])


def failure(proc):
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 3, out
    return lines(out)[-1]


def test_an_address_where_nothing_answers_is_a_timeout_naming_it(tmp_path):
    port = free_port()
    t0 = time.monotonic()
    err = failure(start(tmp_path, 1, 2, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, MLOS_COLLECTIVE_TIMEOUT_MS=1500))
    assert err["code"] == ERR_TIMEOUT, err
    assert f"127.0.0.1:{port}" in err["message"] and "timed out" in err["message"], err
    print(f"gave up after {time.monotonic() - t0:.2f} s (timeout 1.5 s): {err['message']}")

    # Under torchrun the agent serves the store: rank 0 must not start one.
    err = failure(start(tmp_path, 0, 2, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, MLOS_COLLECTIVE_TIMEOUT_MS=1500,
                        TORCHELASTIC_USE_AGENT_STORE="True"))
    assert err["code"] == ERR_TIMEOUT and f"127.0.0.1:{port}" in err["message"], err

    err = failure(start(tmp_path, 1, 2, MLOS_STORE="tcp://no-such-host.invalid:29500",
                        MLOS_COLLECTIVE_TIMEOUT_MS=1500))
    assert err["code"] == ERR_TIMEOUT and "no-such-host.invalid" in err["message"], err
    # A resolver slower than the timeout leaves the rendezvous's own message.
    assert "resolve" in err["message"] or "did not complete" in err["message"], err


def test_something_else_at_the_address_is_named_not_waited_for(tmp_path):
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen(8)
        port = other.getsockname()[1]
        rank = start(tmp_path, 1, 2, MLOS_STORE=f"tcp://127.0.0.1:{port}")
        conn, _ = other.accept()
        with conn:
            conn.recv(64)
            conn.sendall(b"SSH-2.0-OpenSSH\r\n")  # an answer, but not the PING nonce
            err = failure(rank)
    assert err["code"] == ERR_IO, err
    assert f"127.0.0.1:{port}" in err["message"] and "not as a TCPStore" in err["message"], err


def closed_by_server(sock):
    sock.settimeout(30)
    try:
        while sock.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_hostile_bytes_do_not_bring_down_the_store_rank_zero_serves(tmp_path):
    port = free_port()
    rank0 = start(tmp_path, 0, 2, MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    try:
        assert serves_tcpstore(port, time.monotonic() + 60)
        key = lambda k: struct.pack("<Q", len(k)) + k  # noqa: E731
        attacks = [
            os.urandom(4096).replace(b"\x00", b"\x01"),                   # garbage: not VALIDATE first
            VALIDATE + struct.pack("<I", 0xDEADBEEF),                      # the wrong magic number
            VALIDATE + MAGIC + b"\x01" + struct.pack("<Q", 2**62),         # SET with a 4 EiB key
            VALIDATE + MAGIC + b"\x01" + key(b"/k") + struct.pack("<Q", 2**40),  # a 1 TiB value
            VALIDATE + MAGIC + b"\x06" + struct.pack("<Q", 2**33),         # WAIT for 2^33 keys
            VALIDATE + MAGIC + b"\xff",                                    # no such query
        ]
        for attack in attacks:
            with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                s.sendall(attack)
                assert closed_by_server(s), attack[:16]
        # A client that hangs up half-way through a request costs nothing either.
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(VALIDATE + MAGIC + b"\x01" + struct.pack("<Q", 100) + b"/half")
        assert rank0.poll() is None, rank0.communicate()[0]
        assert serves_tcpstore(port, time.monotonic() + 30)
        finish([rank0, start(tmp_path, 1, 2, MASTER_ADDR="127.0.0.1", MASTER_PORT=port)])
    finally:
        rank0.kill()
        rank0.wait(30)


def test_a_rank_given_to_two_processes_is_refused(tmp_path):
    """Ranks 0 and 1 run; a second process given rank 1 is refused at once
    with INVALID_ARGUMENT naming the holder (its claim in the store), and
    the running ranks are not disturbed."""
    port = free_port()
    store = f"tcp://127.0.0.1:{port}"
    procs = [start_mode(tmp_path, r, 2, "loop", MLOS_STORE=store) for r in range(2)]
    try:
        for p in procs:
            ready = p.stdout.readline()
            assert '"ready"' in ready, ready + p.stdout.read()
        twin = start_mode(tmp_path, 1, 2, "loop", MLOS_STORE=store)
        out = twin.communicate(timeout=60)[0]
        assert twin.returncode == 3, out
        error = lines(out)[-1]
        assert error["code"] == ERR_INVALID_ARGUMENT, error
        assert "rank 1 is already taken" in error["message"] and f":{procs[1].pid}:" in error["message"], error
        assert all(p.poll() is None for p in procs), "the running ranks stopped"
    finally:
        for p in procs:
            p.kill()
            p.communicate()


TORCH_INTRUDER = textwrap.dedent("""
    import datetime, sys
    import torch.distributed as dist
    try:
        s = dist.TCPStore("127.0.0.1", int(sys.argv[1]), is_master=False, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=5))
        print("served", s.num_keys(), sorted(s.list_keys()))
    except Exception as e:  # refused: the store takes only clients with the secret
        print("refused", type(e).__name__)
""")


def test_ranks_started_by_mlos_run_store_secret_meet_and_a_torch_client_is_refused(tmp_path, torch_python):
    """`mlos run --store-secret` gives rank 0 a fresh MLOS_STORE_SECRET; the
    store rank 0 serves (MASTER_ADDR/MASTER_PORT, loopback) then refuses
    torch's client, which cannot send it, and a rank 1 given the same
    secret joins."""
    port = free_port()
    secret_file = tmp_path / "secret"
    rank0 = subprocess.Popen(
        [str(build_dir() / "bin" / "mlos"), "run", "--store-secret", "--no-tune", "--", "sh", "-c",
         f'printf %s "$MLOS_STORE_SECRET" > {secret_file}.part && mv {secret_file}.part {secret_file} && '
         f'exec {build_dir() / "bin" / "mlos_collective_rank"} check'],
        env=rank_env(tmp_path, 0, 2, MASTER_ADDR="127.0.0.1", MASTER_PORT=port), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    (tmp_path / "runtime").mkdir(exist_ok=True)
    try:
        deadline = time.monotonic() + 60
        while not secret_file.exists() and rank0.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        secret = secret_file.read_text()
        assert len(secret) == 32 and int(secret, 16) >= 0, secret
        # Once rank 0 listens, a client without the secret is closed.
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                break
            except OSError:
                time.sleep(0.05)
        intruder = subprocess.run([torch_python, "-c", TORCH_INTRUDER, str(port)], capture_output=True, text=True,
                                  timeout=120)
        assert intruder.stdout.startswith("refused"), intruder.stdout + intruder.stderr
        finish([rank0, start(tmp_path, 1, 2, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, MLOS_STORE_SECRET=secret)])
    finally:
        rank0.kill()
        rank0.wait(30)
