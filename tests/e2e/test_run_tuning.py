# SPDX-License-Identifier: Apache-2.0
"""`mlos run`'s start-up tuning (docs/tuning.md), seen from inside the
child: the allocator it chose is mapped in the process (/proc/self/maps),
its variables are in the environment, `--no-tune` leaves both alone, a
missing allocator is a note and never a failure, and the step times a run
reports decide the next run of the same command."""
import json
import sys
from pathlib import Path

import pytest

from cli_helpers import *  # noqa: F401,F403
from conftest import build_dir

# Prints what the process itself sees: its mapped files and the variables
# mlos run may set.
PROBE = ("import json, os; maps = open('/proc/self/maps').read(); "
         "print(json.dumps({'libs': sorted({l.split()[-1] for l in maps.splitlines() if '.so' in l}), "
         "'env': {k: v for k, v in os.environ.items() if k.startswith(('MLOS_TUNE_CHOICE', 'MLOS_TUNE_REASON', 'MLOS_TUNE_EVIDENCE', 'LD_PRELOAD', 'MALLOC_CONF', "
         "'GLIBC_TUNABLES', 'OMP_WAIT_POLICY'))}}))")


def tcmalloc():
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib"):
        if Path(d, "libtcmalloc_minimal.so.4").exists():
            return str(Path(d, "libtcmalloc_minimal.so.4"))
    pytest.skip("libtcmalloc-minimal4 is not installed (scripts/setup.sh installs it)")


def probe_run(mlos, *flags, env=None):
    r = mlos.run("run", "--cpus", "1", *flags, "--", sys.executable, "-c", PROBE, env=env)
    assert r.returncode == 0, mlos.describe(r)
    return json.loads(r.stdout), r.stderr


def mapped(seen, soname):
    """The maps name the file the soname's link resolves to (.so.4.5.10)."""
    return any(Path(lib).name.startswith(soname) for lib in seen["libs"])


def test_a_python_command_runs_with_tcmalloc_mapped(mlos):
    path = tcmalloc()
    seen, err = probe_run(mlos, "--explain")
    assert mapped(seen, "libtcmalloc_minimal.so.4"), seen["libs"]
    assert Path(seen["env"]["LD_PRELOAD"]).resolve() == Path(path).resolve()  # /lib or /usr/lib: merged /usr
    assert seen["env"]["MLOS_TUNE_CHOICE"] == "tcmalloc"
    assert "tuning for this Python command: tcmalloc" in err and "measured default" in err, err
    evidence = Path(seen["env"]["MLOS_TUNE_EVIDENCE"])
    assert evidence.parent.parent == mlos.runtime.parent / "tune"
    # The run is recorded as started; it took no training steps, so no time.
    lines = [json.loads(l) for l in evidence.read_text().splitlines()]
    assert len(lines) == 1 and "started" in lines[0]


def test_a_measured_python_command_then_tries_passive_openmp_threads(mlos):
    """Once the default has a step time (written here as the library
    writes it at release), the next run of the same Python command is the
    trial of tcmalloc with OMP_WAIT_POLICY=passive; a wait policy the user
    set is kept, with a note."""
    tcmalloc()
    first, _ = probe_run(mlos)
    evidence = Path(first["env"]["MLOS_TUNE_EVIDENCE"])
    with evidence.open("a") as f:
        f.write(json.dumps({"step_ms": 10.0, "steps": 5}) + "\n")
    seen, err = probe_run(mlos, "--explain")
    assert seen["env"]["MLOS_TUNE_CHOICE"] == "tcmalloc+omp-passive", err
    assert seen["env"]["OMP_WAIT_POLICY"] == "passive"
    assert mapped(seen, "libtcmalloc_minimal.so.4"), seen["libs"]
    assert "trying tcmalloc+omp-passive once to compare with tcmalloc 10 ms/step" in err, err
    assert (evidence.parent / "tcmalloc+omp-passive.jsonl").exists()
    # Forget that trial, so that the next run is it again, now with the
    # user's own wait policy: kept.
    (evidence.parent / "tcmalloc+omp-passive.jsonl").unlink()
    kept, err = probe_run(mlos, "--explain", env={"OMP_WAIT_POLICY": "active"})
    assert kept["env"]["MLOS_TUNE_CHOICE"] == "tcmalloc+omp-passive"
    assert kept["env"]["OMP_WAIT_POLICY"] == "active"
    assert "OMP_WAIT_POLICY is set already; tcmalloc+omp-passive's passive not applied" in err, err


def test_no_tune_passes_the_environment_on_as_it_is(mlos):
    tcmalloc()
    seen, err = probe_run(mlos, "--no-tune", "--explain", env={"MLOS_TUNE_EVIDENCE": "/outer/run/file"})
    assert not mapped(seen, "libtcmalloc_minimal.so.4"), seen["libs"]
    assert seen["env"] == {}, seen["env"]
    assert "--no-tune" in err
    assert not (mlos.runtime.parent / "tune").exists()


def test_the_users_allocator_is_kept(mlos):
    path = tcmalloc()
    seen, err = probe_run(mlos, "--explain", env={"LD_PRELOAD": path})
    assert seen["env"]["LD_PRELOAD"] == path
    assert "MLOS_TUNE_EVIDENCE" not in seen["env"]
    assert "LD_PRELOAD already names an allocator" in err, err


def test_a_missing_allocator_is_a_note_and_the_next_candidate_runs(mlos, tmp_path):
    empty = tmp_path / "no-allocators"
    empty.mkdir()
    seen, err = probe_run(mlos, "--explain", env={"MLOS_ALLOCATOR_DIRS": str(empty)})
    assert not mapped(seen, "libtcmalloc_minimal.so.4"), seen["libs"]
    assert seen["env"]["MLOS_TUNE_CHOICE"] == "glibc-retain"
    assert seen["env"]["GLIBC_TUNABLES"].startswith("glibc.malloc.mmap_threshold=")
    assert "LD_PRELOAD" not in seen["env"]
    assert "tcmalloc is not installed (Debian package libtcmalloc-minimal4)" in err, err
    assert "jemalloc is not installed (Debian package libjemalloc2)" in err, err


def test_an_unusable_store_is_a_note(mlos, tmp_path):
    tcmalloc()
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    seen, err = probe_run(mlos, "--explain", env={"MLOS_TUNE_DIR": str(shared)})
    assert seen["env"]["MLOS_TUNE_CHOICE"] == "tcmalloc"
    assert "MLOS_TUNE_EVIDENCE" not in seen["env"]
    assert "writable by others" in err, err


def test_json_carries_the_choice(mlos):
    tcmalloc()
    r = mlos.run("run", "--cpus", "1", "--json", "--", sys.executable, "-c", "pass")
    assert r.returncode == 0, mlos.describe(r)
    t = json.loads(r.stderr.splitlines()[-1])["tuning"]
    assert t["candidate"] == "tcmalloc" and t["command_kind"] == "Python" and t["library"].endswith(".so.4")
    assert "LD_PRELOAD=" + t["library"] in t["set"]


def test_step_times_decide_the_next_runs_of_a_command(mlos):
    """mlos-demo (examples/train_loop.c) marks OPTIMIZER once per step, so
    each run reports a time per step: the default (glibc, for a command
    that is not Python) first, then one trial of each other candidate, then
    whichever measured fastest."""
    tcmalloc()
    demo = str(build_dir() / "bin" / "mlos-demo")
    told = []
    for _ in range(4):
        r = mlos.run("run", "--cpus", "1", "--explain", "--", demo, "20", "1", timeout=120)
        assert r.returncode == 0, mlos.describe(r)
        told.append(r.stderr)
    head = "tuning for this other command: "
    assert head + "glibc\n" in told[0] and "measured default" in told[0], told[0]
    assert head + "tcmalloc" in told[1] and "trying tcmalloc once" in told[1], told[1]
    assert head + "glibc-retain" in told[2] and "set: GLIBC_TUNABLES=glibc.malloc.mmap_threshold" in told[2], told[2]
    tune = mlos.runtime.parent / "tune"
    (command,) = [d for d in tune.iterdir()]
    assert json.loads((command / "command.json").read_text())["argv"] == [demo, "20", "1"]
    first_ms = {}
    for name in ("glibc", "tcmalloc", "glibc-retain"):
        steps = [json.loads(l) for l in (command / f"{name}.jsonl").read_text().splitlines() if "step_ms" in l]
        assert steps and all(s["steps"] == 20 and s["step_ms"] > 0 for s in steps), (name, steps)
        first_ms[name] = steps[0]["step_ms"]
    # The fourth run's pick is the candidate with the lowest step time if
    # it beat the default (glibc) by more than 5 %, else the default.
    fastest = min(first_ms, key=first_ms.get)
    if fastest == "glibc" or first_ms[fastest] < 0.95 * first_ms["glibc"]:
        pick, why = fastest, "fastest measured for this command"
    else:
        pick, why = "glibc", "the measured default, kept"
    assert why in told[3], (first_ms, told[3])
    assert head + pick + "\n" in told[3] or head + pick + " (" in told[3], (first_ms, told[3])


def test_status_shows_what_a_running_job_was_given(mlos):
    """`mlos status` reads the choice from the job's own environment
    (/proc/<pid>/environ); a claim made without tuning shows none."""
    tcmalloc()
    tuned = mlos.popen("run", "--cpus", "1", "--", "sleep", "30")
    plain = mlos.popen("run", "--cpus", "1", "--no-tune", "--", "sleep", "30")
    try:
        wait_for_exec(tuned, "sleep")
        wait_for_exec(plain, "sleep")
        claims = {c["pid"]: c for c in mlos.status()["claims"]}
        assert claims[tuned.pid]["tuning"] == "glibc"  # sleep is not Python: the default for other commands
        assert claims[plain.pid]["tuning"] == ""
        r = mlos.run("status")
        assert r.returncode == 0, mlos.describe(r)
        header = next(l for l in r.stdout.splitlines() if l.split()[:1] == ["ID"])
        assert header.split()[-2:] == ["TUNING", "LABEL"]
        rows = {int(l.split()[1]): l.split() for l in r.stdout.splitlines() if l.split()[:1] != ["ID"] and
                len(l.split()) > 2 and l.split()[1].isdigit()}
        assert rows[tuned.pid][-2:] == ["glibc", "sleep"] and rows[plain.pid][-2:] == ["-", "sleep"], rows
    finally:
        kill_and_reap(tuned)
        kill_and_reap(plain)
