#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README command 1: install what the demo needs (Debian 12, root), build
# only what it runs, and run the main job on the embedded engine: a small
# training loop that shows its placement, its phases and its phase
# profile; then `mlos` confining an unmodified program (the steps:
# scripts/lib/demo_steps.sh). No daemon, no Python, no services; what it
# writes (runtime directory, tuning store) lives in a temporary directory
# removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --demo
bash scripts/build.sh --demo
bash scripts/lib/demo_steps.sh ./build/bin
