# SPDX-License-Identifier: Apache-2.0
"""Relocatable installs (docs/releases.md, "Relocatable installs"): the
build installed with `cmake --install --prefix P` for a P other than the
configured one, and every binary finds its parts under P from its own real
location: mlos run through PATH and through a symlink, `mlos policy list`
without mlosd, a C program built as README's build-by-hand example shows,
and mlosd, which uses a sibling only when it passes the trust test (owned
by root, it and every directory above it writable by neither group nor
others) and otherwise names it and keeps its configured paths."""
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import DEFAULT_TIMEOUT, build_dir

# What would point a binary at its parts instead of its own location.
_LOCATORS = ("MLOS_POLICY_HOST", "MLOS_POLICY_DIR", "MLOS_DATALOAD_HELPER", "MLOS_GPUSHARE_LIBRARY")


def install(prefix: Path) -> Path:
    r = subprocess.run(["cmake", "--install", str(build_dir()), "--prefix", str(prefix)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return prefix


def configured_prefix() -> str:
    for line in (build_dir() / "CMakeCache.txt").read_text().splitlines():
        if line.startswith("CMAKE_INSTALL_PREFIX:"):
            return line.split("=", 1)[1]
    raise AssertionError("no CMAKE_INSTALL_PREFIX in the build's CMakeCache.txt")


def untrusted(path: Path) -> str:
    """The trust test of os/trusted_path.h, from outside: '' or why not."""
    p = path.resolve()
    for component in [p, *p.parents]:
        st = component.stat()
        if component != p and stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX and st.st_uid == 0:
            continue  # a sticky directory of root's above the path (/tmp)
        if st.st_uid != 0:
            return f"{component} is owned by uid {st.st_uid}"
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return f"{component} is writable by its group or by others"
    return ""


@pytest.fixture(scope="module")
def prefix() -> Path:
    # Under the build tree, readable by all: pytest's own temporary
    # directories are root's alone (0700), and a policy host that an
    # embedded job of root starts runs as nobody.
    p = build_dir() / "test-runtime" / "relocated" / f"prefix-{os.getpid()}"
    shutil.rmtree(p, ignore_errors=True)
    install(p)
    assert configured_prefix() != str(p)
    yield p
    shutil.rmtree(p, ignore_errors=True)


def run(argv, mlos, cwd, env=None, timeout=DEFAULT_TIMEOUT):
    e = {k: v for k, v in mlos.env().items() if k not in _LOCATORS}
    e.update(env or {})
    return subprocess.run(argv, env=e, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)


def test_a_relocated_mlos_runs_a_policy_from_its_own_prefix(prefix, mlos, tmp_path):
    # The policy host (libexec/mlos) and the policies (lib/mlos/policies)
    # are found from bin/mlos, not from the configured prefix.
    r = run([str(prefix / "bin" / "mlos"), "run", "--cpus", "1", "--policy", "auto", "--", "true"], mlos, tmp_path,
            env={"MLOS_MODE": "embedded"})
    assert r.returncode == 0, mlos.describe(r)
    j = json.loads(run([str(prefix / "bin" / "mlos"), "policy", "list", "--json"], mlos, tmp_path,
                       env={"MLOS_MODE": "embedded"}).stdout)
    assert j["source"] == "embedded"
    assert j["dir"] == str(prefix / "lib" / "mlos" / "policies")
    assert j["host"] == str(prefix / "libexec" / "mlos" / "mlos-policyhost")
    assert {"auto", "example", "thread-governor"} <= {p["name"] for p in j["available"]}
    assert j["defaults"] == ["thread-governor"] and j["loaded"] == []


def test_through_path_and_through_a_symlink_mlos_finds_its_parts(prefix, mlos, tmp_path):
    links = tmp_path / "links"
    links.mkdir()
    (links / "mlos").symlink_to(prefix / "bin" / "mlos")
    for path_dir in (prefix / "bin", links, build_dir() / "bin"):
        r = run(["mlos", "run", "--cpus", "1", "--policy", "example", "--", "true"], mlos, tmp_path,
                env={"MLOS_MODE": "embedded", "PATH": f"{path_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"})
        assert r.returncode == 0, f"mlos through PATH={path_dir}: {mlos.describe(r)}"
    # From the build tree, its own policies, not an installed prefix's.
    r = run(["mlos", "policy", "list", "--json", "--source", "embedded"], mlos, tmp_path,
            env={"PATH": f"{build_dir() / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"})
    assert r.returncode == 0, mlos.describe(r)
    assert json.loads(r.stdout)["dir"] == str((build_dir() / "policies").resolve())


def test_policy_list_without_mlosd_is_the_embedded_catalog_and_says_so(mlos, tmp_path):
    # auto with no daemon at the socket: the embedded catalog, not an error.
    r = run([mlos.binary, "policy", "list", "--socket", str(tmp_path / "none.sock")], mlos, tmp_path)
    assert r.returncode == 0, mlos.describe(r)
    assert r.stdout.startswith("no mlosd: the catalog of an embedded job"), r.stdout
    assert "thread-governor" in r.stdout and "auto" in r.stdout
    # daemon: mlosd or fail, as before.
    r = run([mlos.binary, "policy", "list", "--source", "daemon", "--socket", str(tmp_path / "none.sock")], mlos,
            tmp_path)
    assert r.returncode == 1 and "mlosd unavailable" in r.stderr, mlos.describe(r)
    # Without a policy host the catalog still lists, and says why jobs cannot use it.
    r = run([mlos.binary, "policy", "list", "--json", "--source", "embedded"], mlos, tmp_path,
            env={"MLOS_POLICY_HOST": "/nonexistent/mlos-policyhost"})
    assert r.returncode == 0, mlos.describe(r)
    j = json.loads(r.stdout)
    assert j["host"] is None and "/nonexistent/mlos-policyhost" in j["host_error"], j
    assert "thread-governor" in {p["name"] for p in j["available"]}


def test_the_build_by_hand_example_compiles_and_runs_from_the_prefix(prefix, mlos, tmp_path):
    if shutil.which("cc") is None or shutil.which("pkg-config") is None:
        pytest.skip("needs cc and pkg-config")
    app = tmp_path / "app.c"
    app.write_text(r"""
#include <mlos/training.h>
#include <mlos/errors.h>
#include <stdio.h>
int main(void) {
  mlos_training_resource_request_t req = {.num_cpus = 1, .numa_node_preference = -1};
  mlos_training_resources_t* res = NULL;
  if (mlos_training_request_resources(&req, &res) != 0) { printf("request: %s\n", mlos_last_error_message()); return 1; }
  /* The policy host is found beside libmlos.so.0, under the prefix. */
  int rc = mlos_training_request_policy(res, "example", "{}");
  printf("request_policy: %s %s\n", mlos_strerror(rc), rc ? mlos_last_error_message() : "");
  mlos_training_release_resources(res);
  return rc;
}
""")
    lib = prefix / "lib"
    # README's command, with the rpath it names.
    cmd = (f"cc {app} -o {tmp_path / 'app'} $(PKG_CONFIG_PATH={lib / 'pkgconfig'} pkg-config --cflags --libs mlos) "
           f"-Wl,-rpath,{lib}")
    r = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = run([str(tmp_path / "app")], mlos, tmp_path, env={"MLOS_MODE": "embedded"})
    assert r.returncode == 0 and "request_policy: success" in r.stdout, mlos.describe(r)


def check_config(mlosd: Path, mlos, cwd) -> (dict, str):
    r = run([str(mlosd), "--check-config", "--cgroups", "none", "--confine", "off"], mlos, cwd)
    assert r.returncode == 0, mlos.describe(r)
    return json.loads(r.stdout)["policies"], r.stderr


def test_a_relocated_mlosd_uses_its_siblings_only_when_root_alone_could_have_written_them(mlos, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the trust test's outcome here depends on root owning the tree")
    configured = configured_prefix()
    # Under the build tree (root's, not writable by others where CI runs).
    p = build_dir() / "test-runtime" / "relocated-mlosd" / tmp_path.name
    shutil.rmtree(p, ignore_errors=True)
    install(p)
    try:
        why = untrusted(p / "lib" / "mlos" / "policies")
        if why:
            pytest.skip(f"the build tree fails the trust test here ({why})")
        policies, _ = check_config(p / "sbin" / "mlosd", mlos, tmp_path)
        assert policies["dir"] == str(p / "lib" / "mlos" / "policies")
        assert policies["host"] == str(p / "libexec" / "mlos" / "mlos-policyhost")
        # A directory others could write to: named, and the configured one used.
        (p / "lib" / "mlos").chmod(0o775)
        policies, err = check_config(p / "sbin" / "mlosd", mlos, tmp_path)
        assert policies["dir"] == f"{configured}/lib/mlos/policies"
        assert policies["host"] == str(p / "libexec" / "mlos" / "mlos-policyhost")  # still trusted
        assert f"{p / 'lib' / 'mlos'} is writable by its group or by others" in err, err
    finally:
        shutil.rmtree(p, ignore_errors=True)


def test_a_mlosd_relocated_under_tmp_uses_only_what_root_alone_could_have_placed(mlos, tmp_path):
    # /tmp is writable by everyone but sticky: only an entry's owner may
    # rename it there, so root's own directories under it are root's alone
    # (os/trusted_path.h). Another user's directory on the way is not.
    under_tmp = install(tmp_path / "prefix")
    why = untrusted(under_tmp / "lib" / "mlos" / "policies")
    if why:
        pytest.skip(f"the temporary directory fails the trust test here ({why})")
    policies, _ = check_config(under_tmp / "sbin" / "mlosd", mlos, tmp_path)
    assert policies["dir"] == str(under_tmp / "lib" / "mlos" / "policies")
    os.chown(under_tmp, 4321, 4321)
    policies, err = check_config(under_tmp / "sbin" / "mlosd", mlos, tmp_path)
    configured = configured_prefix()
    assert policies["dir"] == f"{configured}/lib/mlos/policies"
    assert policies["host"] == f"{configured}/libexec/mlos/mlos-policyhost"
    assert "is not used:" in err and f"{under_tmp} is owned by uid 4321, not root" in err, err
