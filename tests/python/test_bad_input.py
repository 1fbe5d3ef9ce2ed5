# SPDX-License-Identifier: Apache-2.0
"""Bad arguments from Python: the package's rule (mlos_training/errors.py)
is TypeError for an object of the wrong type and MLOSError(INVALID_ARGUMENT)
naming the argument for a value the library cannot take, including values
the C ABI cannot carry (a NUL in a path, an integer outside its C type)."""
import os

import pytest

import mlos_training as m
from mlos_training import MLOSTrainingContext

ERR_INVALID_ARGUMENT = -1


def assert_invalid(excinfo, *words):
    assert excinfo.value.code == ERR_INVALID_ARGUMENT, excinfo.value
    for w in words:
        assert w in str(excinfo.value), excinfo.value


# -- paths --------------------------------------------------------------------

@pytest.mark.parametrize("kind", [str, bytes, "pathlike"])
def test_a_path_with_a_nul_byte_is_refused_not_truncated(tmp_path, kind):
    out = tmp_path / "out"
    out.mkdir()
    target = str(out / "ckpt.pt")
    text = target + "\0.evil"
    path = {str: text, bytes: os.fsencode(text), "pathlike": type("P", (), {"__fspath__": lambda s: text})()}[kind]
    with pytest.raises(m.MLOSError) as e:
        m.write_file_atomic(path, b"data")
    assert_invalid(e, "NUL")
    # Before, the C string ended at the NUL and this file was written.
    assert not os.path.exists(target)
    assert os.listdir(out) == []


def test_a_path_of_the_wrong_type_is_a_type_error(tmp_path):
    with pytest.raises(TypeError):
        m.write_file_atomic(42, b"data")


def test_paths_as_bytes_and_pathlike_name_the_file_itself(tmp_path):
    # bytes were once passed through str(): "b'/tmp/...'" named another file.
    out = tmp_path / "out"
    out.mkdir()
    m.write_file_atomic(os.fsencode(out / "a.bin"), b"1")
    m.write_file_atomic(out / "b.bin", b"22")
    raw = os.fsencode(out) + b"/c\xff.bin"  # a file name that is not UTF-8
    m.write_file_atomic(raw, b"333")
    assert sorted(os.listdir(os.fsencode(out))) == [b"a.bin", b"b.bin", b"c\xff.bin"]
    with open(raw, "rb") as f:
        assert f.read() == b"333"


# -- memory_bytes and the other integers of a request ---------------------------

@pytest.mark.parametrize("kwargs, name", [
    ({"memory_bytes": -1}, "memory_bytes"),
    ({"memory_bytes": 1 << 64}, "memory_bytes"),
    ({"memory_bytes": float("inf")}, "memory_bytes"),
    ({"num_cpus": 1 << 31}, "num_cpus"),
    ({"numa_preference": -(1 << 40)}, "numa_preference"),
    ({"priority": 1 << 63}, "priority"),
])
def test_request_values_outside_the_c_types_are_invalid_argument(kwargs, name):
    with pytest.raises(m.MLOSError) as e:
        m.request_resources(**{"num_cpus": 1, **kwargs})
    assert_invalid(e, name)


def test_largest_memory_bytes_reaches_the_library():
    # 2**64 - 1 fits the C field; the library itself then says no memory.
    with pytest.raises(m.MLOSError) as e:
        m.request_resources(num_cpus=1, memory_bytes=(1 << 64) - 1)
    assert e.value.name == "INSUFFICIENT_MEMORY", e.value


@pytest.mark.parametrize("kwargs, name", [
    ({"memory_bytes": -1}, "memory_bytes"),
    ({"memory_bytes": 1 << 64}, "memory_bytes"),
    ({"memory_gb": -1}, "memory_gb"),
    ({"memory_gb": 1 << 40}, "memory_gb"),
    ({"memory_gb": float("nan")}, "memory_gb"),
])
def test_training_context_refuses_a_bad_size_when_made(kwargs, name):
    with pytest.raises(m.MLOSError) as e:
        MLOSTrainingContext(num_cpus=1, **kwargs)
    assert_invalid(e, name)


# -- memory callbacks -------------------------------------------------------------

@pytest.mark.parametrize("fn", [5, None, "print"])
def test_a_callback_that_is_not_callable_is_refused_at_registration(fn):
    with m.request_resources(num_cpus=1, exclusive_cpus=False) as res:
        with pytest.raises(TypeError, match="callable"):
            res.register_memory_callback(fn)
        assert res._callbacks == []
        res.register_memory_callback(lambda level, info: None)  # a callable still registers
        assert len(res._callbacks) == 1
