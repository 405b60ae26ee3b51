/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hooks for the tests that link the library's internal copy
 * (libmembarrier-testing.la: the same objects as the installed library,
 * with this file in place of init.c's constructor).  Never installed.
 */
#include "sig.h"
#include "testing.h"

/* tests/race, tests/bit10: forget what detection published. */
void lmb_test_reset(void)
{
	__atomic_store_n(&lmb_lib_word, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&lmb_kern_word, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&lmb_fast_word, 0, __ATOMIC_RELAXED);
	lmb_query_answer_store(0);
	lmb_light_flag_store(1);
}

/* tests/list-complete: a barrier's listing, through slot 0's descriptor. */
long lmb_test_list(char **list)
{
	long fd = lmb_task_fd(&lmb_owns[0]);

	if (fd < 0)
		return fd;
	return lmb_list_threads(&lmb_owns[0], fd, lmb_gettid(), list);
}

/* tests/litmus, bench/share: the heavy barrier's calls, and sharing on/off. */
unsigned int lmb_test_calls(void)
{
	return lmb_coalesce_calls();
}

void lmb_test_coalesce(int on)
{
	lmb_coalesce_set(on);
}

/* tests/inversion, tests/litmus: the waits cut short, and the waiters'
 * patience (testing.h). */
unsigned int lmb_test_cut(void)
{
	return lmb_coalesce_cut();
}

void lmb_test_patient(int on)
{
	lmb_coalesce_patient(on);
}

/* tests/children: shared calls that ended without counting (a child
 * sharing our memory whose kernel command failed, coalesce.c). */
unsigned int lmb_test_uncounted(void)
{
	return lmb_coalesce_uncounted();
}

unsigned long lmb_test_owner(void)
{
	return (unsigned long)lmb_coalesce_owner();
}

/* tests/move: keep a moved thread on its first CPU this long (ns). */
void lmb_test_force_hold(long long ns)
{
	lmb_force_hold_ns = ns;
}

/* What the installed library's constructor does besides detection: the
 * fork handler of shared calls and the process that owns their word. */
__attribute__((constructor)) static void lmb_test_init(void)
{
	lmb_coalesce_prepare();
}
