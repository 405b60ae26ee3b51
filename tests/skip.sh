# SPDX-License-Identifier: LGPL-2.1-or-later
# skip_all REASON, for the TAP test scripts that need tools a machine may
# lack (sourced by tests/guest/lib.sh and tests/debian-install.sh): the
# test skips (exit 77), except where the caller says it must run
# (LIBMEMBARRIER_REQUIRE_GUEST=1: tests/run-all.sh, hence CI), where a
# skip would hide it and it fails instead.
skip_all() {
	if [ "${LIBMEMBARRIER_REQUIRE_GUEST:-0}" = 1 ]; then
		echo "Bail out! $* (LIBMEMBARRIER_REQUIRE_GUEST=1)"
		exit 1
	fi
	echo "1..0 # SKIP $*"
	exit 77
}
