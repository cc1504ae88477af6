# Sourced by the scripts that fetch or build guests (tests/guest/fetch.sh,
# tests/debian/mkimage.sh): install Debian packages they miss.
#   apt_install WHO "PKG PKG ..."   (nothing when the list is empty)
# As root with apt-get: installs them; otherwise says what to run and exits 1.
apt_install() {
	[ -n "$2" ] || return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "$1: installing: $2" >&2
		# shellcheck disable=SC2086
		# (waiting for dpkg's lock: make check builds the Debian image in
		# the background while the guests' fetch may install too)
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends $2 >&2
	else
		echo "$1: missing tools; run: apt-get install -y $2" >&2
		exit 1
	fi
}
