/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The library's constructor: prepare the mechanisms (the fork handlers of
 * the signal mechanism and of shared heavy barriers) and detect, before
 * the program's first call, while it is most likely single-threaded.  Only the installed library has it:
 * the tests' copy (testing.c) lets each test choose when detection runs.
 */
#include "internal.h"

__attribute__((constructor)) static void lmb_init(void)
{
	lmb_mech_prepare();
	lmb_coalesce_prepare();
	(void)lmb_state();
}
