# SPDX-License-Identifier: Apache-2.0
# Sourced by the setup scripts: apt_install_missing TAG PACKAGE... installs,
# as root, those of the Debian packages not installed yet (one apt-get
# update, no recommends), saying which under TAG; nothing when all are.
apt_install_missing() {
  local tag="$1"
  shift
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "$tag: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
