# SPDX-License-Identifier: Apache-2.0
"""Red-team measurement of the TCPStore server that rank 0 runs for a
tcp:// rendezvous (src/collectives/tcp_store_server.cpp).

    /opt/mlos/venv/bin/python bench/store_attacks.py [--rank-binary PATH] [--out DIR]
                                                     [--only NAME[,NAME]]

Needs a build: build/bin/mlos_collective_rank (or $MLOS_BUILD_DIR/bin, or
--rank-binary). Each attack starts a fresh rank 0 (RANK=0 WORLD_SIZE=2
MLOS_STORE=tcp://127.0.0.1:PORT on a fresh free port, mode `check`,
MLOS_MODE=embedded, a private MLOS_RUNTIME_DIR), which serves the store and
waits for a rank 1 that normally never comes; the attack talks raw TCPStore
protocol (tcp_store.h) to it, and rank 0 is killed at the end. Every figure
comes from /proc/<rank 0>/status (VmRSS, VmHWM), /proc/<rank 0>/fd,
/proc/<rank 0>/stat and /proc/net/tcp{,6}, or from what a client observes
on the wire; never from the server's own claims.

1. multi_get_amplification: a client SETs one 8 MiB value; 8 connections
   each VALIDATE and send 4 MULTI_GETs of that key 7 times over, and never
   read a reply. Rank 0's RSS growth after a settle (PINGs on a separate
   good connection), and whether a fresh client's PING is answered.
2. unfinished_multi_set: 8 connections each send a MULTI_SET declaring 6
   pairs of (key, 8 MiB value), all of it but the last byte. RSS growth,
   and how many of the 8 the server closed.
3. descriptor_exhaustion: rank 0 runs with a soft RLIMIT_NOFILE of 1024
   (hard limit unchanged); the attacker (soft limit raised to its hard one)
   opens 1100 connections that never VALIDATE. A third of them trickle one
   byte every 2 s: the first 4 bytes of VALIDATE's 5 (query byte and 3 of
   the 4 magic bytes; a 5th would complete or fail the validation, so they
   stop there and stay silent); the rest send nothing. Rank 0's open
   descriptors over time, whether a fresh client is served (PING within
   5 s) during the flood and again 15 s in, and whether a real rank 1 (same
   environment, RANK=1) completes `check` with rank 0 within 60 s.
4. quadratic_wait: one connection sends a WAIT for 131072 distinct missing
   keys (~10 bytes each) followed by CANCEL_WAIT, while another client
   PINGs in a loop: the longest PING (the stall) and the time until the
   CANCEL_WAIT is answered (the server got through the WAIT). 3 repetitions
   on the same rank 0, median reported.
5. bind_and_takeover: rank 0's listening sockets for the port (from
   /proc/net/tcp and tcp6: 0.0.0.0 / :: or 127.0.0.1), whether the store
   answers at a non-loopback address of this machine although MLOS_STORE
   named 127.0.0.1, and what an intruder sees there: LIST_KEYS (and whether
   its SET is taken). The intruder runs as the same uid here (noted in the
   output); the protocol has no authentication, so the uid does not matter.

6. descriptor_exhaustion_hard_1024: as 3, with rank 0's hard limit 1024
   too (lowered in its preexec), so that it cannot raise its soft limit.
7. secret_takeover: both ranks get MLOS_STORE_SECRET; an intruder without
   it and one with another secret try LIST_KEYS; then the real rank 1
   joins.

What became of the attackers' connections is read from the server's end
in /proc/net/tcp{,6} ("*_server_side": held = an open descriptor of rank 0,
queued = still in the accept queue, closed = rank 0 closed it): the client's
end of a closed connection can look established for as long as unread
replies hold back the FIN. RSS figures are MiB; "rss_peak_growth_mib" is
VmHWM (rank 0's peak since it started) minus the baseline.

Prints one JSON line per attack on stdout (progress goes to stderr) and
writes DIR/store_attacks.json (DIR: --out, default build/store-attacks) with
the ranks' logs in DIR/logs. Every wait has a deadline (the whole run takes
about 2.5 minutes, 5 at most); a failure is a field ("error"), and the exit
status is 0.
"""
import argparse
import json
import os
import platform
import random
import resource
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("MLOS_BUILD_DIR") or REPO / "build")


def repo_relative(path):
    """`path` relative to the repository when it lies inside it, so that
    committed results name no machine's checkout."""
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(REPO))
    except ValueError:
        return str(path)

MiB = 1 << 20
MAGIC = 0x3C85F7CE
Q_VALIDATE, Q_SET, Q_GET, Q_WAIT, Q_GET_NUM_KEYS = 0, 1, 3, 6, 7
Q_MULTI_GET, Q_MULTI_SET, Q_CANCEL_WAIT, Q_PING, Q_LIST_KEYS = 10, 11, 12, 13, 17
Q_MLOS_AUTH = 0xA5  # mlOS's own: the group secret after VALIDATE (MLOS_STORE_SECRET)
RANK_TIMEOUT_MS = 600000
TCP_ESTABLISHED_HEX, TCP_LISTEN_HEX = "01", "0A"  # /proc/net/tcp states (linux/tcp_states.h)


def log(msg):
    print(f"[store_attacks {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the wire
# torch's TCPStore protocol (tcp_store.h): a query byte and its arguments,
# integers in host byte order (little-endian everywhere torch runs).

def u64(n):
    return struct.pack("<Q", n)


def blob(b):
    return u64(len(b)) + b


def validate_req():
    return bytes([Q_VALIDATE]) + struct.pack("<I", MAGIC)


def set_req(key, value):
    return bytes([Q_SET]) + blob(key) + blob(value)


def get_req(key):
    return bytes([Q_GET]) + blob(key)


def keys_req(query, keys):
    return bytes([query]) + u64(len(keys)) + b"".join(blob(k) for k in keys)


def ping_req(nonce):
    return bytes([Q_PING]) + struct.pack("<I", nonce)


def recv_exact(sock, n, deadline):
    """n bytes, or an exception (socket.timeout once `deadline` passed,
    ConnectionError when the peer closed)."""
    parts, got = [], 0
    while got < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("timed out")
        sock.settimeout(left)
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise ConnectionError("closed by the server")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


class StoreClient:
    """A validated connection that reads its replies."""

    def __init__(self, host, port, timeout=5.0, secret=None):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(validate_req())
        if secret is not None:  # mlOS's MLOS_AUTH: the group secret, answered with one byte
            self.sock.sendall(bytes([Q_MLOS_AUTH]) + blob(secret))
            if recv_exact(self.sock, 1, time.monotonic() + timeout) != b"\0":
                raise ConnectionError("the secret was not accepted")

    def send(self, data, timeout=10.0):
        self.sock.settimeout(timeout)
        self.sock.sendall(data)

    def ping(self, timeout=5.0):
        """Round-trip seconds; raises when not answered in `timeout`."""
        deadline = time.monotonic() + timeout
        nonce = random.getrandbits(32)
        t0 = time.monotonic()
        self.send(ping_req(nonce), timeout)
        if struct.unpack("<I", recv_exact(self.sock, 4, deadline))[0] != nonce:
            raise ConnectionError("PING answered with another nonce")
        return time.monotonic() - t0

    def set(self, key, value, timeout=10.0):
        self.send(set_req(key, value), timeout)

    def get(self, key, timeout=10.0):
        deadline = time.monotonic() + timeout
        self.send(get_req(key), timeout)
        n = struct.unpack("<Q", recv_exact(self.sock, 8, deadline))[0]
        return recv_exact(self.sock, n, deadline)

    def num_keys(self, timeout=5.0):
        deadline = time.monotonic() + timeout
        self.send(bytes([Q_GET_NUM_KEYS]), timeout)
        return struct.unpack("<q", recv_exact(self.sock, 8, deadline))[0]

    def list_keys(self, timeout=5.0):
        deadline = time.monotonic() + timeout
        self.send(bytes([Q_LIST_KEYS]), timeout)
        count = struct.unpack("<q", recv_exact(self.sock, 8, deadline))[0]
        keys = []
        for _ in range(count):
            n = struct.unpack("<Q", recv_exact(self.sock, 8, deadline))[0]
            keys.append(recv_exact(self.sock, n, deadline).decode("utf-8", "replace"))
        return keys

    def close(self):
        self.sock.close()


def fresh_ping(host, port, timeout=5.0):
    """Whether a new client (connect, VALIDATE, PING) is served in `timeout`."""
    t0 = time.monotonic()
    try:
        c = StoreClient(host, port, timeout)
        try:
            c.ping(max(0.05, timeout - (time.monotonic() - t0)))
        finally:
            c.close()
        return {"served": True, "seconds": round(time.monotonic() - t0, 4)}
    except (OSError, ConnectionError) as e:
        return {"served": False, "seconds": round(time.monotonic() - t0, 4), "error": f"{type(e).__name__}: {e}"}


def send_counting(sock, pieces, deadline):
    """Sends the byte strings in `pieces` until done, an error or the
    deadline; returns (bytes sent, None or why it stopped)."""
    sent = 0
    for piece in pieces:
        view = memoryview(piece)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                return sent, "deadline (the server stopped reading)"
            try:
                sock.settimeout(min(left, 1.0))
                n = sock.send(view)
            except socket.timeout:
                continue
            except OSError as e:
                return sent, f"{type(e).__name__}: {e}"
            sent += n
            view = view[n:]
    return sent, None


def free_port():
    with socket.socket(socket.AF_INET6 if socket.has_ipv6 else socket.AF_INET) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def non_loopback_ipv4():
    """This machine's IPv4 addresses other than 127/8: the source address
    of the default route (a UDP connect sends nothing), then `ip -4 addr`."""
    found = []
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("8.8.8.8", 53))
            found.append(s.getsockname()[0])
    except OSError:
        pass
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, timeout=5).stdout
        for line in out.splitlines():
            parts = line.split()
            if "inet" in parts:
                addr = parts[parts.index("inet") + 1].split("/")[0]
                if not addr.startswith("127.") and addr not in found:
                    found.append(addr)
    except (OSError, subprocess.SubprocessError):
        pass
    return found


# ------------------------------------------------------------ /proc readers

def proc_status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def rss_mib(pid):
    return round(proc_status_kib(pid, "VmRSS") / 1024, 1)


def hwm_mib(pid):
    return round(proc_status_kib(pid, "VmHWM") / 1024, 1)


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def nofile_limits(pid):
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                soft, hard = line.split()[3:5]
                return {"soft": soft, "hard": hard}
    return None


def socket_inodes(pid):
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def decode_address(hex_addr):
    """/proc/net/tcp{,6} local address: IPv4 as one little-endian word,
    IPv6 as four."""
    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words)


def tcp_rows():
    """/proc/net/tcp and tcp6: (table, local address, local port, remote
    port, state, receive queue, inode) per socket."""
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/net/{table}") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            addr, lport = cols[1].rsplit(":", 1)
            yield (table, addr, int(lport, 16), int(cols[2].rsplit(":", 1)[1], 16), cols[3],
                   int(cols[4].split(":")[1], 16), cols[9])


def listening_sockets(pid, port):
    """Rank 0's listening sockets at `port`: address and accept queue."""
    mine = socket_inodes(pid)
    return [{"table": table, "address": decode_address(addr), "accept_queue": queue}
            for table, addr, lport, _, state, queue, inode in tcp_rows()
            if state == TCP_LISTEN_HEX and lport == port and inode in mine]


def server_side(pid, port, socks):
    """What became of the server's end of each client socket: "held" (an
    open descriptor of rank 0), "queued" (still in the accept queue) or
    "closed" (rank 0 closed it, though unread data may hold back the FIN:
    the client's end can still look established)."""
    mine = socket_inodes(pid)
    ends = {}
    for _, _, lport, rport, state, _, inode in tcp_rows():
        if lport == port and state != TCP_LISTEN_HEX:
            ends[rport] = "held" if inode in mine else "queued" if state == TCP_ESTABLISHED_HEX else "closed"
    counts = {"held": 0, "queued": 0, "closed": 0}
    for s in socks:
        try:
            counts[ends.get(s.getsockname()[1], "closed")] += 1
        except OSError:
            counts["closed"] += 1
    return counts


# ------------------------------------------------------------------ ranks

def rank_env(rank, port, runtime_dir, secret=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MLOS_") and k not in ("RANK", "WORLD_SIZE", "TORCHELASTIC_USE_AGENT_STORE")}
    env.update(RANK=str(rank), WORLD_SIZE="2", MLOS_STORE=f"tcp://127.0.0.1:{port}",
               MLOS_RUNTIME_DIR=str(runtime_dir), MLOS_MODE="embedded", MLOS_COLLECTIVE_HOST="127.0.0.1",
               MLOS_COLLECTIVE_TIMEOUT_MS=str(RANK_TIMEOUT_MS))
    if secret is not None:
        env["MLOS_STORE_SECRET"] = secret.decode()
    return env


def nofile(limit, hard_too=False):
    """A preexec setting rank 0's soft RLIMIT_NOFILE (and, with hard_too,
    its hard one: lowering it needs no privilege)."""
    def preexec():
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        soft = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, soft if hard_too else hard))
    return preexec


class Rank:
    """One mlos_collective_rank process, its output in a log file."""

    def __init__(self, binary, rank, port, runtime_dir, log_path, mode="check", preexec=None, secret=None):
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen([str(binary), mode], env=rank_env(rank, port, runtime_dir, secret),
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
                                     preexec_fn=preexec)
        self.pid = self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout=max(0.0, timeout))
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        if self.alive():
            self.proc.kill()
        self.wait(10)
        self.log.close()

    def tail(self, n=5):
        try:
            return Path(self.log_path).read_text(errors="replace").splitlines()[-n:]
        except OSError:
            return []


def wait_ready(rank, port, timeout=20.0, min_keys=1, secret=None):
    """Until rank 0 answers a PING at its port and holds `min_keys` keys
    (its own rendezvous keys: it is then waiting for rank 1)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not rank.alive():
            raise RuntimeError(f"rank 0 exited with {rank.proc.returncode}: {rank.tail()}")
        try:
            c = StoreClient("127.0.0.1", port, 1.0, secret)
            try:
                c.ping(1.0)
                if c.num_keys(1.0) >= min_keys:
                    return
            finally:
                c.close()
        except (OSError, ConnectionError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"rank 0 did not serve its store at port {port} in {timeout:.0f} s: {rank.tail()}")


def settle(client, rounds=2, pause=0.5):
    """Lets the server work through what it was sent: PINGs on a good
    connection, answered only once the loop came round."""
    rtts = []
    for _ in range(rounds):
        time.sleep(pause)
        try:
            rtts.append(round(client.ping(10.0), 4))
        except (OSError, ConnectionError) as e:
            return {"synced": False, "error": f"{type(e).__name__}: {e}"}
    return {"synced": True, "ping_s": rtts}


def open_attackers(port, n, timeout=5.0):
    """n validated connections that never read."""
    conns = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        s.sendall(validate_req())
        conns.append(s)
    return conns


# ---------------------------------------------------------------- attacks

def memory_after_attack(r, pid, base_mib):
    """Rank 0's RSS now and its peak (VmHWM, since rank 0 started), each
    also as growth over `base_mib`, into `r`."""
    r["rss_after_attack_mib"] = rss_mib(pid)
    r["rss_growth_mib"] = round(r["rss_after_attack_mib"] - base_mib, 1)
    r["vm_hwm_mib"] = hwm_mib(pid)
    r["rss_peak_growth_mib"] = round(r["vm_hwm_mib"] - base_mib, 1)


def multi_get_amplification(ctx):
    port, pid = ctx["port"], ctx["rank0"].pid
    key, value = b"/store_attacks/big", b"\xa5" * (8 * MiB)
    conns_n, keys_per_get, repeats = 8, 7, 4
    good = StoreClient("127.0.0.1", port)
    r = {"value_mib": 8, "connections": conns_n, "keys_per_multi_get": keys_per_get,
         "multi_gets_per_connection": repeats, "rss_start_mib": rss_mib(pid)}
    good.set(key, value)
    settle(good)
    r["rss_after_set_mib"] = rss_mib(pid)
    conns = open_attackers(port, conns_n)
    request = keys_req(Q_MULTI_GET, [key] * keys_per_get)
    for s in conns:
        s.settimeout(5.0)
        for _ in range(repeats):
            try:
                s.sendall(request)
            except OSError:
                break
    r["settle"] = settle(good, rounds=3)
    memory_after_attack(r, pid, r["rss_after_set_mib"])
    r["attack_connections_server_side"] = server_side(pid, port, conns)
    r["fresh_client_ping"] = fresh_ping("127.0.0.1", port)
    for s in conns:
        s.close()
    settle(good)
    r["rss_after_attackers_closed_mib"] = rss_mib(pid)
    good.close()
    return r


def unfinished_multi_set(ctx):
    port, pid = ctx["port"], ctx["rank0"].pid
    conns_n, pairs = 8, 6
    value = b"\x5a" * (8 * MiB)
    good = StoreClient("127.0.0.1", port)
    settle(good)
    r = {"connections": conns_n, "pairs": pairs, "value_mib": 8, "rss_start_mib": rss_mib(pid)}
    conns = open_attackers(port, conns_n)
    outcome = [None] * conns_n
    deadline = time.monotonic() + 40

    def attack(i):
        pieces = [bytes([Q_MULTI_SET]) + u64(pairs)]
        for p in range(pairs):
            pieces += [blob(f"/store_attacks/ms{i}_{p}".encode()) + u64(len(value)),
                       value if p < pairs - 1 else value[:-1]]
        outcome[i] = send_counting(conns[i], pieces, deadline)

    threads = [threading.Thread(target=attack, args=(i,), daemon=True) for i in range(conns_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, deadline + 5 - time.monotonic()))
    r["bytes_per_connection"] = 1 + 8 + pairs * (8 + 20 + 8 + len(value)) - 1
    r["bytes_sent_mib"] = [round(o[0] / MiB, 1) if o else None for o in outcome]
    r["send_stopped"] = [o[1] for o in outcome if o and o[1]]
    r["settle"] = settle(good, rounds=3)
    memory_after_attack(r, pid, r["rss_start_mib"])
    r["connections_server_side"] = server_side(pid, port, conns)
    r["fresh_client_ping"] = fresh_ping("127.0.0.1", port)
    for s in conns:
        s.close()
    settle(good)
    r["rss_after_attackers_closed_mib"] = rss_mib(pid)
    good.close()
    return r


class FdSampler(threading.Thread):
    """Rank 0's open descriptors (and its listening socket's accept queue)
    every `period` seconds."""

    def __init__(self, pid, port, period=0.5):
        super().__init__(daemon=True)
        self.pid, self.port, self.period = pid, port, period
        self.samples, self.stopped = [], threading.Event()
        self.t0 = time.monotonic()

    def run(self):
        while not self.stopped.is_set():
            try:
                queue = max((s["accept_queue"] for s in listening_sockets(self.pid, self.port)), default=None)
                self.samples.append((round(time.monotonic() - self.t0, 1), fd_count(self.pid), queue))
            except OSError:
                return  # rank 0 is gone
            self.stopped.wait(self.period)

    def stop(self):
        self.stopped.set()
        self.join(5)


class Trickler(threading.Thread):
    """One byte every 2 s on each connection: VALIDATE's query byte and 3 of
    its 4 magic bytes, never the last."""

    PREFIX = validate_req()[:4]

    def __init__(self, conns, period=2.0):
        super().__init__(daemon=True)
        self.conns, self.period = conns, period
        self.bytes_sent, self.send_failed = 0, set()
        self.stopped = threading.Event()

    def run(self):
        for i in range(len(self.PREFIX)):
            for n, s in enumerate(self.conns):
                if n in self.send_failed:
                    continue
                try:
                    s.settimeout(0.2)
                    s.send(self.PREFIX[i:i + 1])
                    self.bytes_sent += 1
                except OSError:
                    self.send_failed.add(n)
            if self.stopped.wait(self.period):
                return

    def stop(self):
        self.stopped.set()
        self.join(5)


def raise_own_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def open_flood(port, n, deadline):
    """n connections that never VALIDATE; (connections, failures)."""
    conns, failures = [], []
    for _ in range(n):
        if time.monotonic() > deadline:
            failures.append("deadline")
            break
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2.0)
            conns.append(s)
        except OSError as e:
            failures.append(f"{type(e).__name__}: {e}")
    return conns, failures


def descriptor_exhaustion(ctx):
    port, rank0 = ctx["port"], ctx["rank0"]
    pid, flood_n = rank0.pid, 1100
    r = {"rank0_nofile": nofile_limits(pid), "attacker_nofile_soft": raise_own_nofile(),
         "flood_connections": flood_n, "trickling": "every 3rd: VALIDATE's first 4 of 5 bytes, 1 byte / 2 s",
         "rank0_fds_before": fd_count(pid)}
    sampler = FdSampler(pid, port)
    sampler.start()
    cpu0 = cpu_seconds(pid)
    t_flood = time.monotonic()
    conns, failures = open_flood(port, flood_n, t_flood + 40)
    r["flood_opened"] = len(conns)
    r["flood_failures"] = {f: failures.count(f) for f in sorted(set(failures))}
    r["flood_open_s"] = round(time.monotonic() - t_flood, 2)
    trickler = Trickler(conns[::3])
    trickler.start()
    try:
        time.sleep(1.0)
        r["fresh_client_during_flood"] = fresh_ping("127.0.0.1", port, 5.0)
        time.sleep(max(0.0, t_flood + 15 - time.monotonic()))
        r["fresh_client_after_15s"] = fresh_ping("127.0.0.1", port, 5.0)
        r["flood_server_side_15s"] = server_side(pid, port, conns)
        r["trickling_server_side_15s"] = server_side(pid, port, conns[::3])
        r["rank0_cpu_s_during_flood"] = round(cpu_seconds(pid) - cpu0, 2)
        r["rank1_join"] = join_rank1(ctx, 60.0)
    finally:
        trickler.stop()
        sampler.stop()
    fds = [s[1] for s in sampler.samples]
    queues = [s[2] for s in sampler.samples if s[2] is not None]
    r["rank0_fds_max"] = max(fds, default=None)
    r["rank0_fds_end"] = fds[-1] if fds else None
    r["accept_queue_max"] = max(queues, default=None)
    r["rank0_fds_timeline"] = [[t, n] for t, n, _ in sampler.samples[::10]]  # [s, fds] every 5 s
    r["trickle_bytes_sent"] = trickler.bytes_sent
    for s in conns:
        s.close()
    return r


def join_rank1(ctx, timeout):
    """Starts a real rank 1; whether both ranks finish `check` in time."""
    rank1 = Rank(ctx["binary"], 1, ctx["port"], ctx["runtime_dir"], ctx["logs"] / f"{ctx['name']}-rank1.log",
                 secret=ctx.get("secret"))
    t0 = time.monotonic()
    try:
        rc1 = rank1.wait(timeout)
        rc0 = ctx["rank0"].wait(timeout - (time.monotonic() - t0))
        return {"completed": rc0 == 0 and rc1 == 0, "rank0_rc": rc0, "rank1_rc": rc1,
                "seconds": round(time.monotonic() - t0, 1), "rank1_output_tail": rank1.tail(3)}
    finally:
        rank1.stop()


class Pinger(threading.Thread):
    """PINGs in a loop on its own connection: the longest round trip."""

    def __init__(self, port, deadline):
        super().__init__(daemon=True)
        self.client, self.deadline = StoreClient("127.0.0.1", port), deadline
        self.rtts, self.error = [], None
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.is_set():
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.error = "deadline"
                return
            t0 = time.monotonic()
            try:
                self.rtts.append(self.client.ping(left))
            except (OSError, ConnectionError) as e:
                self.rtts.append(time.monotonic() - t0)
                self.error = f"unanswered: {type(e).__name__}: {e}"
                return
            time.sleep(0.005)

    def stop(self):
        self.stopped.set()
        self.join(max(1.0, self.deadline - time.monotonic() + 1))
        self.client.close()


def one_wait_round(port, keys_n, tag, limit_s):
    keys = [f"/w{tag}_{i:06d}".encode() for i in range(keys_n)]
    request = keys_req(Q_WAIT, keys) + bytes([Q_CANCEL_WAIT])
    deadline = time.monotonic() + limit_s
    pinger = Pinger(port, deadline)
    pinger.start()
    time.sleep(0.2)  # a few quick PINGs first
    attacker = StoreClient("127.0.0.1", port)
    out = {"request_mib": round(len(request) / MiB, 2)}
    try:
        attacker.send(request, timeout=limit_s)
        t_sent = time.monotonic()
        recv_exact(attacker.sock, 1, deadline)
        out["wait_answered_s"] = round(time.monotonic() - t_sent, 3)
    except (OSError, ConnectionError) as e:
        out["wait_error"] = f"{type(e).__name__}: {e}"
    time.sleep(0.3)  # PINGs after it, to see the loop quick again
    pinger.stop()
    attacker.close()
    out["stall_s"] = round(max(pinger.rtts, default=0.0), 3)
    out["pings"] = len(pinger.rtts)
    if pinger.error:
        out["ping_error"] = pinger.error
    return out


def quadratic_wait(ctx):
    port, keys_n = ctx["port"], 131072
    c = StoreClient("127.0.0.1", port)
    quiet = sorted(c.ping() for _ in range(20))
    c.close()
    r = {"keys": keys_n, "key_bytes": len(f"/w0_{0:06d}"), "quiet_ping_median_s": round(quiet[10], 5), "rounds": []}
    for rep in range(3):
        r["rounds"].append(one_wait_round(port, keys_n, rep, limit_s=45.0))
        if "wait_error" in r["rounds"][-1] or "ping_error" in r["rounds"][-1]:
            break  # the server is still busy: another round would only queue behind it
    stalls = [x["stall_s"] for x in r["rounds"]]
    r["stall_s_median"] = round(statistics.median(stalls), 3)
    answered = [x["wait_answered_s"] for x in r["rounds"] if "wait_answered_s" in x]
    r["wait_answered_s_median"] = round(statistics.median(answered), 3) if answered else None
    r["fresh_client_ping"] = fresh_ping("127.0.0.1", port)
    return r


def bind_and_takeover(ctx):
    port, pid = ctx["port"], ctx["rank0"].pid
    r = {"store": f"tcp://127.0.0.1:{port}", "listening": listening_sockets(pid, port),
         "intruder": f"same uid as rank 0 ({os.getuid()}); no credential is asked, so the uid does not matter"}
    r["bound_beyond_loopback"] = any(s["address"] not in ("127.0.0.1", "::1") for s in r["listening"])
    r["non_loopback_reachable"] = {a: fresh_ping(a, port, 3.0) for a in non_loopback_ipv4()}
    reachable = [a for a, p in r["non_loopback_reachable"].items() if p["served"]]
    host = reachable[0] if reachable else "127.0.0.1"
    r["intruder_address"] = host
    intruder = StoreClient(host, port)
    try:
        keys = intruder.list_keys()
        r["keys_visible"], r["key_names"] = len(keys), keys[:20]
        probe = b"/store_attacks/intruder"
        intruder.set(probe, b"was here")
        r["intruder_set_accepted"] = intruder.get(probe) == b"was here"
    finally:
        intruder.close()
    return r


def descriptor_exhaustion_hard_1024(ctx):
    """As descriptor_exhaustion, with rank 0's hard limit 1024 too, so the
    process cannot raise its soft one."""
    return descriptor_exhaustion(ctx)


def secret_takeover(ctx):
    """Rank 0 started with MLOS_STORE_SECRET: what an intruder without it,
    or with another one, gets; and whether the real rank 1 (with it) joins."""
    port = ctx["port"]
    r = {"store": f"tcp://127.0.0.1:{port}", "secret": "MLOS_STORE_SECRET set on both ranks"}
    for name, secret in (("no_secret", None), ("wrong_secret", b"0123456789abcdef-not-it")):
        try:
            intruder = StoreClient("127.0.0.1", port, 5.0, secret)
            try:
                keys = intruder.list_keys()
                r[f"intruder_{name}"] = {"keys_visible": len(keys)}
            finally:
                intruder.close()
        except (OSError, ConnectionError) as e:
            r[f"intruder_{name}"] = {"keys_visible": 0, "refused": f"{type(e).__name__}: {e}"}
    r["rank1_join"] = join_rank1(ctx, 60.0)
    return r


ATTACKS = [multi_get_amplification, unfinished_multi_set, descriptor_exhaustion, descriptor_exhaustion_hard_1024,
           quadratic_wait, bind_and_takeover, secret_takeover]
RANK0_PREEXEC = {"descriptor_exhaustion": nofile(1024), "descriptor_exhaustion_hard_1024": nofile(1024, hard_too=True)}
RANK0_SECRET = {"secret_takeover": b"store-attacks-" + os.urandom(8).hex().encode()}


# ----------------------------------------------------------------- runner

def run_attack(attack, binary, out):
    name = attack.__name__
    result = {"attack": name}
    t0 = time.monotonic()
    rank0 = None
    with tempfile.TemporaryDirectory(prefix="mlos-store-attacks-") as tmp:
        runtime_dir = Path(tmp) / "runtime"
        runtime_dir.mkdir()
        try:
            port = free_port()
            secret = RANK0_SECRET.get(name)
            rank0 = Rank(binary, 0, port, runtime_dir, out / "logs" / f"{name}-rank0.log",
                         preexec=RANK0_PREEXEC.get(name), secret=secret)
            ctx = {"name": name, "port": port, "rank0": rank0, "binary": binary, "runtime_dir": runtime_dir,
                   "logs": out / "logs", "secret": secret}
            wait_ready(rank0, port, secret=secret)
            result.update(port=port, rank0_pid=rank0.pid, rank0_rss_ready_mib=rss_mib(rank0.pid),
                          rank0_fds_ready=fd_count(rank0.pid))
            result.update(attack(ctx))
            result["rank0_alive_at_end"] = rank0.alive()
        except Exception as e:  # reported, never raised: the run goes on
            result["error"] = f"{type(e).__name__}: {e}"
            result["traceback"] = traceback.format_exc().splitlines()[-4:]
            if rank0 is not None:
                result["rank0_alive_at_end"] = rank0.alive()
                result["rank0_output_tail"] = rank0.tail()
        finally:
            if rank0 is not None:
                rank0.stop()
    result["seconds"] = round(time.monotonic() - t0, 1)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rank-binary", type=Path, default=BUILD / "bin" / "mlos_collective_rank")
    ap.add_argument("--out", type=Path, default=BUILD / "store-attacks")
    ap.add_argument("--only", default="", help="comma-separated attack names (default: all)")
    args = ap.parse_args()
    only = {n for n in args.only.split(",") if n}
    chosen = [a for a in ATTACKS if not only or a.__name__ in only]
    (args.out / "logs").mkdir(parents=True, exist_ok=True)
    summary = {"binary": repo_relative(args.rank_binary), "host": platform.node(), "cpus": os.cpu_count(),
               "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "attacks": {}}
    for attack in chosen:
        log(f"{attack.__name__} ...")
        if not args.rank_binary.exists():
            result = {"attack": attack.__name__, "error": f"no rank binary at {args.rank_binary}"}
        else:
            result = run_attack(attack, args.rank_binary.resolve(), args.out)
        print(json.dumps(result), flush=True)
        summary["attacks"][attack.__name__] = result
    path = args.out / "store_attacks.json"
    path.write_text(json.dumps(summary, indent=1) + "\n")
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit:
        raise
    except BaseException as e:  # the run reports, it does not fail
        log(f"stopped: {type(e).__name__}: {e}")
        sys.exit(0)
