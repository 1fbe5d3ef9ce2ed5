# SPDX-License-Identifier: Apache-2.0
"""Imported at every interpreter start-up in an environment where
mlos_training is installed (through mlos_training_autostart.pth). Does
nothing unless MLOS_PYTHON_HOOKS=1, which `mlos run` sets: then an
unmodified PyTorch script gets the mlOS hooks (mlos_training.autostart)."""
import os

if os.environ.get("MLOS_PYTHON_HOOKS") == "1":
    from mlos_training import autostart

    autostart.install()
