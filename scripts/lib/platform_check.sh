# SPDX-License-Identifier: Apache-2.0
# Sourced by the setup scripts:
#   require_root_on_debian12 TAG
# returns when this runs as root on Debian 12 (bookworm) or on a derivative
# that says it is built on bookworm in /etc/os-release (ID_LIKE has debian
# and VERSION_CODENAME or DEBIAN_CODENAME is bookworm: Raspberry Pi OS,
# LMDE 6); else says plainly why not, and what to do, and exits with 2.
# MLOS_SETUP_ANY_DISTRO=1 turns the distribution check into a warning (the
# package names are Debian 12's: on Ubuntu, libjpeg62-turbo-dev alone makes
# apt refuse the whole list).
require_root_on_debian12() {
  local tag="$1"
  if [[ $EUID -ne 0 ]]; then
    echo "$tag: must run as root: it installs Debian packages with apt-get (try: sudo bash $0)" >&2
    exit 2
  fi
  local ID="" ID_LIKE="" VERSION_ID="" VERSION_CODENAME="" DEBIAN_CODENAME="" PRETTY_NAME="an unknown system"
  local os_release="${MLOS_OS_RELEASE:-/etc/os-release}"  # another file: tests only
  if [[ -r $os_release ]]; then
    # shellcheck disable=SC1090
    source "$os_release"
  fi
  local bookworm=0
  if [[ $ID == debian && ($VERSION_ID == 12 || $VERSION_CODENAME == bookworm) ]]; then
    bookworm=1
  elif [[ " $ID_LIKE " == *" debian "* && ($VERSION_CODENAME == bookworm || $DEBIAN_CODENAME == bookworm) ]]; then
    bookworm=1
  fi
  command -v apt-get > /dev/null && command -v dpkg-query > /dev/null || bookworm=0
  ((bookworm == 0)) || return 0
  if [[ "${MLOS_SETUP_ANY_DISTRO:-0}" == 1 ]]; then
    echo "$tag: warning: this is $PRETTY_NAME, not Debian 12; trying Debian 12's package names anyway (MLOS_SETUP_ANY_DISTRO=1)" >&2
    return 0
  fi
  echo "$tag: this is $PRETTY_NAME; these scripts install Debian 12 (bookworm) packages and run only there" \
       "or on a derivative built on bookworm. Elsewhere, install the packages named in scripts/setup.sh" \
       "yourself and run scripts/build.sh (or set MLOS_SETUP_ANY_DISTRO=1 to try Debian 12's names)." >&2
  exit 2
}
