# SPDX-License-Identifier: Apache-2.0
"""Finding one's way in the CLI: "did you mean", the hint about `--`,
examples in --help, the commit in --version, bash and zsh completion that
offer every option --help lists, and the man pages generated from --help."""
import re
import shutil
import subprocess

import pytest

from cli_helpers import EXIT_RUN_FAILED, EXIT_USAGE
from conftest import REPO_ROOT, build_dir

COMPLETIONS = REPO_ROOT / "packaging" / "completions"
SUBCOMMANDS = ("topo", "status", "top", "daemon", "run", "policy", "env")
POLICY_ACTIONS = ("list", "info", "load", "unload")


# -- did you mean, and the `--` hint ----------------------------------------

@pytest.mark.parametrize("args, rc, expected", [
    (("stauts",), EXIT_USAGE, 'mlos: unknown subcommand "stauts" (did you mean "status"?); the subcommands are'),
    (("top0",), EXIT_USAGE, '(did you mean "topo" or "top"?)'),
    (("policy", "lst"), EXIT_USAGE, 'mlos policy: unknown subcommand "lst" (did you mean "list"?)'),
    (("top", "--intreval", "1"), EXIT_USAGE, 'mlos top: unknown option "--intreval"; did you mean "--interval"?'),
    (("status", "--jsn"), EXIT_USAGE, 'did you mean "--json"?'),
    (("run", "--cpu", "1", "--", "true"), EXIT_RUN_FAILED, 'mlos run: unknown option "--cpu"; did you mean "--cpus"?'),
    (("run", "--exclusiv", "--", "true"), EXIT_RUN_FAILED, 'did you mean "--exclusive"?'),
], ids=lambda v: v if isinstance(v, int) else "_".join(v) if isinstance(v, tuple) else None)
def test_mistyped_words_are_named_with_the_closest(mlos, args, rc, expected):
    r = mlos.run(*args)
    assert r.returncode == rc, mlos.describe(r)
    assert expected in r.stderr, mlos.describe(r)
    assert r.stdout == ""


def test_an_option_far_from_every_name_gets_no_guess(mlos):
    r = mlos.run("status", "--zzzzzzzz")
    assert r.returncode == EXIT_USAGE, mlos.describe(r)
    assert 'unknown option "--zzzzzzzz" (see mlos status --help)' in r.stderr
    assert "did you mean" not in r.stderr


def test_command_options_without_dashes_get_the_hint(mlos):
    r = mlos.run("run", "--cpus", "1", "true", "--epochs", "3")
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    assert ('mlos run: unknown option "--epochs" after CMD "true": options after CMD belong to mlos; '
            'put `--` before the command') in r.stderr, r.stderr
    assert not mlos.ledger.exists()  # refused before anything was claimed
    # With `--` the same options reach CMD.
    r = mlos.run("run", "--cpus", "1", "--", "sh", "-c", 'echo "$@"', "sh", "--epochs", "3")
    assert r.returncode == 0, mlos.describe(r)
    assert r.stdout == "--epochs 3\n"


# -- --help and --version -----------------------------------------------------

@pytest.mark.parametrize("sub, expected", [
    ((), "mlos run -- python train.py"),
    (("run",), "mlos run --cpu-list 0,2-3 -- ./bench"),
    (("top",), "q or F10 quit"),
    (("status",), "mlos status --json"),
    (("policy",), "mlos policy list"),
    (("topo",), "mlos topo --json"),
    (("env",), "mlos env --markdown"),
])
def test_help_ends_with_examples(mlos, sub, expected):
    r = mlos.run(*sub, "--help")
    assert r.returncode == 0, mlos.describe(r)
    assert "Examples:" in r.stdout or "Keys" in r.stdout
    assert expected in r.stdout


def test_version_names_the_commit_built(mlos):
    r = mlos.run("--version")
    assert r.returncode == 0, mlos.describe(r)
    m = re.fullmatch(r"mlos (\S+) \(commit ([0-9a-f]{4,40}(-dirty)?|unknown)\)\n", r.stdout)
    assert m, r.stdout
    version = re.search(r'#define MLOS_VERSION_STRING "([^"]+)"',
                        (REPO_ROOT / "include" / "mlos" / "version.h").read_text()).group(1)
    assert m.group(1) == version
    # The commit is the generated header's, which a build tree keeps.
    header = build_dir() / "generated" / "build_commit" / "build_commit.h"
    if header.exists():
        assert f'#define MLOS_BUILD_COMMIT "{m.group(2)}"' in header.read_text()


# -- completion -----------------------------------------------------------------

def help_options(mlos, *sub) -> set:
    """Every --long and -s option `mlos SUB --help` lists."""
    r = mlos.run(*sub, "--help")
    assert r.returncode == 0, mlos.describe(r)
    options = set()
    for line in r.stdout.splitlines():
        m = re.match(r"\s+((?:-{1,2}[\w-]+,?)+)", line)
        if m:
            options.update(o for o in m.group(1).split(",") if o)
    assert "--help" in options, r.stdout
    return options


def bash_complete(*words) -> list:
    """COMPREPLY of _mlos for the command line `words`, completing the last."""
    line = " ".join(f"'{w}'" for w in words)
    script = (f"source {COMPLETIONS / 'mlos.bash'}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; "
              "_mlos; printf '%s\\n' \"${COMPREPLY[@]}\"")
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [w for w in r.stdout.splitlines() if w]


def test_bash_completion_loads_and_completes_subcommands():
    assert bash_complete("mlos", "st") == ["status"]
    assert sorted(bash_complete("mlos", "")) == sorted(SUBCOMMANDS)
    assert sorted(bash_complete("mlos", "policy", "")) == sorted(POLICY_ACTIONS)
    assert bash_complete("mlos", "status", "--source", "d") == ["daemon"]
    assert bash_complete("mlos", "run", "--cpu") == ["--cpus", "--cpu-list"]


def test_bash_completion_completes_commands_after_dashes():
    shell = bash_complete("mlos", "run", "--cpus", "2", "--", "bas")
    assert "bash" in shell
    # An option of CMD's is not one of mlos's.
    assert bash_complete("mlos", "run", "--", "bash", "--no") == []


@pytest.mark.parametrize("sub", [("topo",), ("status",), ("top",), ("run",), ("env",), ("policy", "list"),
                                 ("policy", "info"), ("policy", "load"), ("policy", "unload"), ()],
                         ids=lambda s: "_".join(s) or "mlos")
def test_completions_offer_every_option_help_lists(mlos, sub):
    options = help_options(mlos, *sub)
    offered = set(bash_complete("mlos", *sub, "-"))
    assert options <= offered, f"bash completion lacks {sorted(options - offered)}"
    zsh = (COMPLETIONS / "_mlos").read_text()
    missing = {o for o in options if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", zsh)}
    assert not missing, f"zsh completion lacks {sorted(missing)}"


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_completion_parses():
    r = subprocess.run(["zsh", "-n", str(COMPLETIONS / "_mlos")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


# -- man pages --------------------------------------------------------------------

MAN = build_dir() / "man"


@pytest.mark.skipif(not (MAN / "mlos.1").exists(),
                    reason="no man pages in the build tree (help2man was not found when it was configured)")
@pytest.mark.parametrize("page, text", [
    ("mlos.1", "topo"), ("mlos-run.1", "cpu\\-list"), ("mlos-top.1", "iterations"),
    ("mlos-status.1", "source"), ("mlos-topo.1", "json"), ("mlos-policy.1", "unload"),
])
def test_man_pages_are_generated_from_help(page, text):
    content = (MAN / page).read_text()
    assert content.startswith(".\\\" DO NOT MODIFY THIS FILE!  It was generated by help2man"), content[:200]
    assert ".TH " in content
    assert text in content
