#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what the VM test bed needs on the host (Debian 12, as root):
# QEMU, debootstrap and e2fsprogs. Idempotent. tests/vm/run.sh calls it.
set -euo pipefail
# shellcheck source=scripts/lib/apt_packages.sh
source "$(dirname "$0")/../../scripts/lib/apt_packages.sh"
apt_install_missing vm-setup qemu-system-x86 debootstrap e2fsprogs
