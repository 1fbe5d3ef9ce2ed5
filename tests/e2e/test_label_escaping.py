# SPDX-License-Identifier: Apache-2.0
"""A hostile job label on every text output of a real mlosd (red-team
finding 9, issue 47; docs/security.md, "Labels on text outputs"): the
stderr log, `mlos status`, `mlos top -b` and the metrics endpoint show no
raw control character of it, while `mlos status --json` keeps it exact;
and the same for `mlos status` over the embedded ledger."""
import re
import urllib.request

from cli_helpers import kill_and_reap, wait_for_exec
from daemon_helpers import Daemon, wait_for

# A forged log line, a terminal title and an OSC 52 clipboard write.
LABEL = "train\nmlosd: error: forged\x1b]0;title\x07\x1b]52;c;cm0gLXJmIH4=\x07"
# Bytes below 0x20 other than the line end, DEL, and C1 controls (UTF-8).
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f\x80-\x9f]")


def test_a_label_reaches_no_text_output_raw(tmp_path, mlos):
    d = Daemon(tmp_path, cgroups="none", extra_args=["--log", "stderr"]).start()
    try:
        c = d.client()
        reply = c.call("request", num_cpus=1, exclusive=False, label=LABEL)
        assert reply["ok"], reply

        log = d.log.read_text(errors="replace")
        assert not RAW_CONTROL.search(log), repr(log)
        granted = [line for line in log.splitlines() if "LABEL=" in line]
        assert granted and "\\x1b]0;title\\x07" in granted[0], log
        assert not any(line.startswith("mlosd: error: forged") for line in log.splitlines()), log

        j = mlos.json("status", "--json", "--socket", str(d.socket))
        assert [job["label"] for job in j["jobs"]] == [LABEL]
        for argv in (("status",), ("top", "--batch", "--iterations", "1")):
            r = mlos.run(*argv, "--socket", str(d.socket))
            assert r.returncode == 0, mlos.describe(r)
            assert not RAW_CONTROL.search(r.stdout), repr(r.stdout)
            assert "train\\nmlosd: e" in r.stdout, r.stdout

        port = d.status()["daemon"]["metrics_port"]

        def metrics():
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as m:
                return m.read().decode()

        assert wait_for(lambda: "mlos_job_cpus{" in metrics(), timeout=20), metrics()
        text = metrics()
        assert not RAW_CONTROL.search(text), repr(text)
        assert "\\\\x1b]52;c;" in text, text
        c.close()
    finally:
        d.stop()


def test_a_label_in_the_embedded_ledger_reaches_mlos_status_escaped(mlos):
    p = mlos.popen("run", "--cpus", "1", "--label", LABEL, "--", "sleep", "30")
    try:
        wait_for_exec(p, "sleep")
        assert [c["label"] for c in mlos.status()["claims"]] == [LABEL]
        r = mlos.run("status")
        assert r.returncode == 0, mlos.describe(r)
        assert not RAW_CONTROL.search(r.stdout), repr(r.stdout)
        assert "train\\nmlosd: error: forged\\x1b]0;title\\x07" in r.stdout, r.stdout
    finally:
        kill_and_reap(p)
