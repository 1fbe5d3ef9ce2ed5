# SPDX-License-Identifier: Apache-2.0
"""The error table, the exception families, and phases and reductions by
name. The table is generated from include/mlos/errors.h at build time; these
tests fail when the header gains a code the Python side does not place in a
family, or when the installed package was built from another header."""
import pickle
import sys

import pytest

import mlos_training as m
from mlos_training import _core, errors
from mlos_training.distributed import _op_code
from mlos_training.enums import Phase, ReduceOp

from conftest import REPO

sys.path.insert(0, str(REPO / "python" / "tools"))
import gen_error_codes  # noqa: E402

HEADER = REPO / "include" / "mlos" / "errors.h"
BUILTIN = {m.MLOSInvalidArgumentError: ValueError, m.MLOSPermissionError: PermissionError,
           m.MLOSTimeoutError: TimeoutError, m.MLOSConnectionError: ConnectionError,
           m.MLOSSystemError: OSError, m.MLOSNotFoundError: LookupError}


def header_codes():
    return {name: code for name, code, _ in gen_error_codes.parse(HEADER.read_text())}


def unplaced(codes):
    placed = {name for names in errors.FAMILIES.values() for name in names}
    return sorted(set(codes) - placed)


def test_the_installed_table_is_the_headers():
    assert errors.CODES == header_codes()
    assert all(errors.DESCRIPTIONS[name] for name in errors.CODES)


def test_every_code_of_the_header_has_a_family_and_no_family_names_a_missing_code():
    codes = header_codes()
    assert unplaced(codes) == [], "place these codes in mlos_training/errors.py FAMILIES"
    named = [name for names in errors.FAMILIES.values() for name in names]
    assert len(named) == len(set(named)) and set(named) <= set(codes)


def test_a_code_added_to_the_header_is_caught():
    text = HEADER.read_text().replace("MLOS_ERR_GPUS_BUSY = -27\n",
                                      "MLOS_ERR_GPUS_BUSY = -27,\n  /* New. */\n  MLOS_ERR_SOMETHING_NEW = -28\n")
    added = {name: code for name, code, _ in gen_error_codes.parse(text)}
    assert added["SOMETHING_NEW"] == -28 and unplaced(added) == ["SOMETHING_NEW"]


def test_the_library_names_every_code():
    for name, code in errors.CODES.items():
        assert _core.strerror(code) != "unknown error", name


@pytest.mark.parametrize("name", sorted(errors.CODES))
def test_each_code_raises_its_family(name):
    code = errors.CODES[name]
    e = m.MLOSError(code, "why")
    family = errors.error_class(code)
    assert family is not m.MLOSError and type(e) is family
    assert isinstance(e, m.MLOSError) and isinstance(e, RuntimeError)
    assert (e.code, e.name, e.message, str(e)) == (code, name, "why", f"{name}: why")
    if family in BUILTIN:
        assert isinstance(e, BUILTIN[family])
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is family and (back.code, str(back)) == (code, str(e))


def test_an_unknown_code_is_a_plain_mlos_error():
    e = m.MLOSError(-1000)
    assert type(e) is m.MLOSError and e.name == "-1000" and "unknown error" in str(e)


def test_real_failures_raise_their_family(tmp_path):
    import os
    with pytest.raises(m.MLOSResourceError) as e:
        m.request_resources(num_cpus=os.cpu_count() + 1)
    assert e.value.name == "INSUFFICIENT_CPUS"
    res = m.request_resources(num_cpus=1, exclusive_cpus=False)
    m.release_resources(res)
    with pytest.raises(ValueError) as e:  # a released handle: MLOSInvalidArgumentError
        m.set_phase(res, m.PHASE_IDLE)
    assert type(e.value) is m.MLOSInvalidArgumentError and e.value.name == "INVALID_HANDLE"
    from mlos_training.checkpoint import load_latest
    with pytest.raises(LookupError) as e:
        load_latest(str(tmp_path / "none"), "ckpt")
    assert type(e.value) is m.MLOSNotFoundError and e.value.name == "NOT_FOUND"


def test_phases_are_an_int_enum_matching_the_library():
    assert [p.name for p in Phase] == list(m.PHASE_NAMES)
    assert [int(p) for p in Phase] == list(range(_core.PHASE_COUNT))
    assert m.PHASE_FORWARD is Phase.FORWARD and m.PHASE_FORWARD == 2 and isinstance(m.PHASE_FORWARD, int)


def test_set_phase_takes_names_in_any_case_and_lists_them_otherwise():
    with m.request_resources(num_cpus=1, exclusive_cpus=False) as res:
        for phase in ("FORWARD", "backward", Phase.FORWARD, 4, " data_loading "):
            m.set_phase(res, phase)
        prof = res.phase_profile()
        assert prof["entries"][Phase.FORWARD] == 2 and prof["entries"][Phase.BACKWARD] == 1
        assert prof["entries"][Phase.OPTIMIZER] == 1 and prof["current_phase"] == Phase.DATA_LOADING
        with pytest.raises(m.MLOSInvalidArgumentError) as e:
            m.set_phase(res, "FORWRAD")
        assert "'FORWRAD'" in str(e.value) and all(p.name in str(e.value) for p in Phase)


def test_reductions_take_names_and_list_them_otherwise():
    assert m.SUM is ReduceOp.SUM and m.AVG == 4
    assert [_op_code(x) for x in ("sum", "PRODUCT", "prod", "Min", ReduceOp.MAX, 4)] == [
        ReduceOp.SUM, ReduceOp.PROD, ReduceOp.PROD, ReduceOp.MIN, ReduceOp.MAX, ReduceOp.AVG]
    for bad in ("XOR", 7, True):
        with pytest.raises(m.MLOSInvalidArgumentError) as e:
            _op_code(bad)
        assert "SUM (0)" in str(e.value) and "AVG (4)" in str(e.value)
