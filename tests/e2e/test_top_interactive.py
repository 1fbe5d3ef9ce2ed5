# SPDX-License-Identifier: Apache-2.0
"""`mlos top`'s interactive view in a real terminal.

tmux runs `mlos top` in a detached session of a fixed size, against a
private mlosd with two jobs; the test reads the screen with capture-pane
and types with send-keys. Every wait polls the screen for what it should
show, with generous bounds (CI machines are busy); nothing asserts on how
long anything took."""
import os
import re
import shlex
import shutil
import subprocess
import time
import uuid

import pytest

from conftest import build_dir
from daemon_helpers import Daemon, Started, start_job_client, wait_for

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (Debian: tmux)")

WAIT = 60.0  # a bound for anything to appear, not a measurement


class Tmux:
    """A tmux server of this test's own (-L), one session running CMD."""

    def __init__(self, tmp_path, env):
        self.name = f"mlos-top-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.conf = tmp_path / "tmux.conf"
        # No status line, so the pane is the whole window; a pane whose
        # command ended stays, to be read.
        self.conf.write_text("set -g remain-on-exit on\nset -g status off\nset -g default-terminal screen\n")
        self.env = env

    def run(self, *args) -> str:
        r = subprocess.run(["tmux", "-L", self.name, "-f", str(self.conf), *args], env=self.env,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, f"tmux {args}: rc={r.returncode} {r.stderr}"
        return r.stdout

    def start(self, argv, width, height):
        """Runs argv in the pane through sh, which prints "[exited N]" once
        it has ended and stays (tmux 3.3 neither always sets
        pane_dead_status for a command that ends at once, nor keeps what
        was printed after a full-screen program left its alternate screen
        once the pane is dead)."""
        command = ("sh -c " + shlex.quote('"$@"; echo "[exited $?]"; exec sleep 3600') + " sh " +
                   " ".join(shlex.quote(a) for a in argv))
        self.run("new-session", "-d", "-s", "top", "-x", str(width), "-y", str(height), command)

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "top")

    def keys(self, *keys):
        self.run("send-keys", "-t", "top", *keys)

    def pane(self, fmt: str) -> str:
        return self.run("display-message", "-p", "-t", "top", fmt).strip()

    def wait(self, predicate, what: str, timeout=WAIT) -> str:
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if predicate(text):
                return text
            if self.pane("#{pane_dead}") == "1":
                text = self.screen()
                if predicate(text):
                    return text
                break
            time.sleep(0.1)
        pytest.fail(f"the screen never showed {what}; it shows:\n{text}")

    def exit_status(self, timeout=WAIT) -> str:
        """The command's exit status once it has ended."""
        screen = self.wait(lambda s: re.search(r"\[exited \d+\]", s), "that the command ended", timeout)
        return re.search(r"\[exited (\d+)\]", screen).group(1)

    def kill(self):
        subprocess.run(["tmux", "-L", self.name, "kill-server"], env=self.env, capture_output=True, timeout=30)


def job_rows(screen: str) -> dict:
    """label -> columns (JOB M LABEL PID CPUS PHASE ...) of the job list."""
    lines = screen.splitlines()
    header = next((i for i, l in enumerate(lines) if l.split()[:3] == ["JOB", "M", "LABEL"]), None)
    rows = {}
    if header is None:
        return rows
    for line in lines[header + 1:]:
        cols = line.split()
        if len(cols) >= 6 and cols[0].isdigit():
            rows[cols[2]] = cols
    return rows


def order(screen: str, *labels) -> list:
    positions = {label: screen.find(f" {label} ") for label in labels}
    return sorted(labels, key=positions.get)


def cpu_list(text: str) -> set:
    out = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


@pytest.fixture
def started():
    s = Started()
    yield s
    s.stop_all()


def test_interactive_top_meters_rows_sort_filter_resize_scroll_and_quit(mlos_bin, tmp_path, started):
    daemon = started(Daemon(tmp_path, cgroups="none")).start()
    env = daemon.client_env()
    # Two jobs: a training client with phases, created first (job ids
    # ascend), and an idle `mlos run`, so that sorting by JOB and by LABEL
    # give opposite orders.
    started(start_job_client(daemon, cpus=1, exclusive=False, label="zeta"))
    started(subprocess.Popen([mlos_bin, "run", "--cpus", "1", "--label", "alpha", "--", "sleep", "600"], env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    assert wait_for(lambda: {j["label"] for j in daemon.status()["jobs"]} >= {"zeta", "alpha"}, timeout=WAIT), \
        daemon.status()
    status = daemon.status()
    managed = cpu_list(status["cpus"])

    tmux = Tmux(tmp_path, env)
    try:
        tmux.start([mlos_bin, "top", "--socket", str(daemon.socket), "-d", "0.3"], 120, 40)
        screen = tmux.wait(lambda s: {"zeta", "alpha"} <= set(job_rows(s)) and "%]" in s,
                           "both jobs and a meter with a busy share")
        assert "sort CPU%" in screen

        # A meter per CPU mlosd manages, marked with the letter of the job
        # on it ('+' for several).
        rows = job_rows(screen)
        holders = {}
        for cols in rows.values():
            for cpu in cpu_list(cols[4]):
                holders.setdefault(cpu, []).append(cols[1])
        for cpu in managed:
            mark = holders[cpu][0] if len(holders.get(cpu, [])) == 1 else ("+" if cpu in holders else " ")
            assert re.search(rf"(^|\s){cpu}{re.escape(mark)}\[", screen, re.M), (cpu, mark, screen)
        assert rows["zeta"][1] != rows["alpha"][1]
        assert rows["zeta"][5] in ("FORWARD", "BACKWARD", "OPTIMIZER"), rows["zeta"]

        # s cycles the sort column: CPU% -> MEM -> JOB -> LABEL.
        tmux.keys("s")
        tmux.wait(lambda s: "sort MEM" in s, "sort MEM")
        tmux.keys("s")
        screen = tmux.wait(lambda s: "sort JOB" in s and len(job_rows(s)) == 2, "sort JOB")
        assert order(screen, "zeta", "alpha") == ["zeta", "alpha"], screen
        tmux.keys("s")
        screen = tmux.wait(lambda s: "sort LABEL" in s and len(job_rows(s)) == 2, "sort LABEL")
        assert order(screen, "zeta", "alpha") == ["alpha", "zeta"], screen
        tmux.keys("<")
        tmux.wait(lambda s: "sort JOB" in s, "sort JOB again after <")

        # A filter no label contains: no rows; Esc brings them back.
        tmux.keys("/")
        tmux.wait(lambda s: "Filter by label:" in s, "the filter prompt")
        tmux.keys("-l", "nomatch-xyz")
        tmux.keys("Enter")
        screen = tmux.wait(lambda s: 'filter "nomatch-xyz"' in s and not job_rows(s), "no rows under the filter")
        assert "no job's label contains" in screen
        tmux.keys("Escape")
        tmux.wait(lambda s: 'filter "' not in s and len(job_rows(s)) == 2, "both rows after Esc")

        # Help, closed by any key.
        tmux.keys("h")
        tmux.wait(lambda s: "Any key closes this help" in s, "the help page")
        tmux.keys("x")
        tmux.wait(lambda s: len(job_rows(s)) == 2, "the job list after the help")

        # A smaller window is redrawn to its size: the key line moves to
        # the new last line.
        tmux.run("resize-window", "-t", "top", "-x", "90", "-y", "25")
        tmux.wait(lambda s: len(s.splitlines()) <= 25 and "q Quit" in s.splitlines()[-1] and len(job_rows(s)) == 2,
                  "the view redrawn at 90x25")

        # A third job, and a window with room for one job row: the last
        # line says which rows are shown, and the keys scroll (sorted by
        # JOB: zeta, alpha, gamma), never past either end.
        started(subprocess.Popen([mlos_bin, "run", "--cpus", "1", "--label", "gamma", "--", "sleep", "600"], env=env,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        lines = tmux.wait(lambda s: len(job_rows(s)) == 3, "the third job").splitlines()
        header = next(i for i, l in enumerate(lines) if l.split()[:3] == ["JOB", "M", "LABEL"])
        tmux.run("resize-window", "-t", "top", "-x", "90", "-y", str(header + 4))
        tmux.wait(lambda s: "(jobs 1-1 of 3" in s and list(job_rows(s)) == ["zeta"], "one row, zeta, and the indicator")
        tmux.keys("Down")
        tmux.wait(lambda s: "(jobs 2-2 of 3" in s and list(job_rows(s)) == ["alpha"], "alpha after Down")
        tmux.keys("End")
        tmux.wait(lambda s: "(jobs 3-3 of 3" in s and list(job_rows(s)) == ["gamma"], "gamma after End")
        tmux.keys("Down")
        tmux.keys("k")
        tmux.wait(lambda s: list(job_rows(s)) == ["alpha"], "alpha after Down at the end and one row up")
        tmux.keys("Home")
        tmux.wait(lambda s: list(job_rows(s)) == ["zeta"], "zeta after Home")
        tmux.keys("NPage")
        tmux.wait(lambda s: list(job_rows(s)) == ["alpha"], "alpha after PgDn (a page is one row here)")
        tmux.run("resize-window", "-t", "top", "-x", "90", "-y", "25")
        tmux.wait(lambda s: len(job_rows(s)) == 3 and "(jobs" not in s, "all three rows again at 90x25")

        # mlosd goes away: the view says so and keeps running.
        daemon.stop()
        screen = tmux.wait(lambda s: "mlosd unavailable" in s, "that mlosd is unavailable")
        assert "[exited" not in screen

        tmux.keys("q")
        assert tmux.exit_status() == "0", tmux.screen()
    finally:
        tmux.kill()


def test_interactive_top_without_a_daemon_exits_1_naming_the_socket(mlos_bin, tmp_path):
    missing = tmp_path / "no-such.sock"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLOS_")}
    tmux = Tmux(tmp_path, env)
    try:
        tmux.start([mlos_bin, "top", "--socket", str(missing)], 100, 20)
        assert tmux.exit_status() == "1", tmux.screen()
        assert str(missing) in tmux.screen().replace("\n", "")
    finally:
        tmux.kill()
