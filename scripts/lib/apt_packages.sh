# SPDX-License-Identifier: Apache-2.0
# Sourced by the setup scripts:
#   apt_install_missing TAG [--no-start] PACKAGE...
# installs, as root, those of the Debian packages not installed yet (one
# apt-get update, no recommends), saying which under TAG; nothing when all
# are. --no-start: a service that comes with a newly installed package
# (prometheus, redis-server) is neither started now (policy-rc.d, which
# Debian's maintainer scripts obey) nor enabled at boot; the tests start
# the programs themselves.
apt_install_missing() {
  local tag="$1"
  shift
  local no_start=0
  if [[ "${1:-}" == --no-start ]]; then
    no_start=1
    shift
  fi
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "$tag: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  local policy=/usr/sbin/policy-rc.d placed_policy=0
  if ((no_start)) && [[ ! -e $policy ]]; then
    printf '#!/bin/sh\n# placed by mlOS setup for the length of one apt-get install\nexit 101\n' > "$policy"
    chmod 0755 "$policy"
    placed_policy=1
  fi
  local status=0
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || status=$?
  ((placed_policy == 0)) || rm -f "$policy"
  ((status == 0)) || return "$status"
  ((no_start)) || return 0
  local unit
  for p in "${missing[@]}"; do
    while read -r unit; do
      deb-systemd-helper disable "${unit##*/}" > /dev/null 2>&1 || true
      echo "$tag: ${unit##*/} (from $p) is installed, not started, and not enabled at boot"
    done < <(dpkg -L "$p" 2>/dev/null | grep -E '^/(usr/)?lib/systemd/system/[^/]+\.service$' || true)
  done
}
