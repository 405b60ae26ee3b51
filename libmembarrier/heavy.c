/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * membarrier_heavy() and the out-of-line membarrier_light(): the mechanism
 * chosen at start-up (state.c), through the table (mechanism.c), its
 * calls shared by concurrent callers (coalesce.c).
 *
 * By the time a mechanism fails, membarrier_light() may have dropped its
 * fence, and it never takes it back, so a failure returned to the caller
 * could not be survived: the light side would be left with a compiler
 * barrier and no heavy barrier to pair with.  So heavy() does not fail.
 * A kernel command that fails at run time (a seccomp filter installed
 * after start-up, ENOMEM, a process restored onto another kernel) is
 * replaced by the signal mechanism for that call (mechanism.c); the
 * signal mechanism moves to another signal if the application took its
 * own (sig-round.c); where no correct barrier is left, the process aborts
 * with a message (membarrier(3) lists the cases).
 */
#include "internal.h"

LMB_EXPORT int membarrier_heavy(void)
{
	int mechanism = lmb_st_heavy(lmb_state());

	/* A fence is no call; concurrent callers share the others' where
	 * that gains (coalesce.c, mechanism.c). */
	if (mechanism == MEMBARRIER_MECHANISM_FENCE)
		return lmb_mech_barrier(mechanism);
	return lmb_coalesce(mechanism);
}

/*
 * LIBMEMBARRIER_LIGHT_COMPILER_BARRIER's check (<membarrier.h>): the
 * light side is a compiler barrier whatever the library chose, so the
 * heavy side must have a process-wide barrier, and keeps it (heavy()
 * above never falls back to a fence: it aborts).
 */
LMB_EXPORT int membarrier_require_barrier(void)
{
	if (lmb_st_heavy(lmb_state()) == MEMBARRIER_MECHANISM_FENCE)
		lmb_die("this program was built with LIBMEMBARRIER_LIGHT_COMPILER_BARRIER "
			"(membarrier_light() is a compiler barrier), but membarrier_heavy() has "
			"no process-wide barrier here: no membarrier(2) command and no signal "
			"mechanism, or LIBMEMBARRIER_HEAVY=fence (membarrier(3))", 0, 0);
	return 0;
}

/* The out-of-line light barrier, for callers that cannot use the inline. */
#undef membarrier_light
LMB_EXPORT void membarrier_light(void)
{
	if (__atomic_load_n(&libmembarrier_light_fence, __ATOMIC_RELAXED))
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	else
		__asm__ __volatile__("" : : : "memory");
}
