# SPDX-License-Identifier: Apache-2.0
"""The core bindings: effects seen from /proc, and every refusal an
MLOSError with the library's code and message."""
import os
import threading

import pytest

import mlos_training as m

ERR_INVALID_ARGUMENT, ERR_INVALID_HANDLE, ERR_INSUFFICIENT_CPUS = -1, -2, -3


def allowed_cpus(tid):
    with open(f"/proc/self/task/{tid}/status") as f:
        text = f.read()
    spec = text.split("Cpus_allowed_list:")[1].split()[0]
    cpus = set()
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def test_bind_current_thread_pins_it_to_the_allocation_and_release_restores_it():
    seen = {}

    def worker():
        tid = threading.get_native_id()
        before = allowed_cpus(tid)
        res = m.request_resources(num_cpus=1, exclusive_cpus=False)
        m.bind_current_thread(res)
        seen["bound"], seen["cpus"] = allowed_cpus(tid), set(res.cpus)
        m.release_resources(res)
        seen["after"], seen["before"] = allowed_cpus(tid), before

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen["bound"] == seen["cpus"] and len(seen["cpus"]) == 1
    assert seen["after"] == seen["before"]


def test_phases_are_counted_in_the_profile():
    with m.request_resources(num_cpus=1, exclusive_cpus=False) as res:
        for phase in (m.PHASE_DATA_LOADING, m.PHASE_FORWARD, m.PHASE_BACKWARD, m.PHASE_FORWARD):
            m.set_phase(res, phase)
        prof = res.phase_profile()
        assert prof["entries"][m.PHASE_FORWARD] == 2 and prof["current_phase"] == m.PHASE_FORWARD
        assert prof["set_phase_calls"] == 4 and prof["collective_calls"] == 0
        assert m.PHASE_NAMES[m.PHASE_BACKWARD] == "BACKWARD"
        assert res.recommended_threads >= 1


@pytest.mark.parametrize("kwargs, code, words", [
    ({"num_cpus": 0}, ERR_INVALID_ARGUMENT, "num_cpus"),
    ({"num_cpus": os.cpu_count() + 1}, ERR_INSUFFICIENT_CPUS, "CPU"),
    ({"num_cpus": 1, "priority": 99}, ERR_INVALID_ARGUMENT, "priority"),
])
def test_bad_requests_are_refused_with_the_librarys_reason(kwargs, code, words):
    with pytest.raises(m.MLOSError) as e:
        m.request_resources(**kwargs)
    assert e.value.code == code, e.value
    assert words.lower() in str(e.value).lower()


def test_misuse_of_a_handle_is_an_error_not_a_crash():
    res = m.request_resources(num_cpus=1, exclusive_cpus=False)
    with pytest.raises(m.MLOSError) as e:
        m.set_phase(res, 42)
    assert e.value.code == ERR_INVALID_ARGUMENT and "phase" in str(e.value)
    with pytest.raises(m.MLOSError) as e:
        m.bind_current_thread(res, cpu_index=5)
    assert e.value.code == ERR_INVALID_ARGUMENT
    m.release_resources(res)
    for call in (lambda: m.release_resources(res), lambda: m.set_phase(res, m.PHASE_IDLE), lambda: res.cpus):
        with pytest.raises(m.MLOSError) as e:
            call()
        assert e.value.code == ERR_INVALID_HANDLE
