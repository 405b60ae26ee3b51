/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A program linked statically with libmembarrier.a, as a user links it
 * (pkg-config --static): tests/static.sh on the host, tests/guest/
 * library.test in the guest.  The constructor must have run before main()
 * (a static link keeps it only because the archive is one object): the
 * light flag is already clear where heavy has a real barrier, QUERY's
 * answer already published where the kernel answered.  The library's
 * internal names must be local: this program defines two of them itself,
 * which a global one in the archive would make a duplicate definition.
 * Then the barriers, with a second thread running.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <membarrier.h>

#include "tap.h"

/* Two of the library's internal names (not on MIPS, where they stay
 * global: configure.ac says why). */
#ifndef __mips__
int lmb_state(void);
int lmb_state(void)
{
	return 42;
}
unsigned int lmb_kern_word = 7;
#endif

static int stop;

static void *spin(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		membarrier_light();
	return NULL;
}

int main(void)
{
	/* What the constructor left, before any call of ours. */
	int fence_at_main = *(const volatile int *)&libmembarrier_light_fence;
	unsigned int query_at_main = *(const volatile unsigned int *)&libmembarrier_query_answer;
	struct membarrier_strategy st;
	const char *heavy;
	pthread_t t;
	int mask, failed = 0;

	tap_plan(6);
	if (membarrier_get_strategy(&st, sizeof(st)) != 0)
		tap_bail("membarrier_get_strategy: %s", strerror(errno));
	heavy = membarrier_mechanism_name(st.heavy);
	tap_diag("heavy %s, kernel QUERY 0x%x (errno %d), probe %s", heavy ? heavy : "(null)",
		 (unsigned int)st.kernel_commands, st.kernel_errno,
		 st.probe_skipped ? "skipped" : "done");
	tap_ok(heavy != NULL, "the heavy mechanism has a name");
	if (st.heavy == MEMBARRIER_MECHANISM_FENCE)
		tap_ok(fence_at_main == 1, "light flag 1 at main() (heavy is a fence)");
	else
		tap_ok(fence_at_main == 0, "the constructor ran: light flag cleared before main() (was %d)",
		       fence_at_main);
	if (st.probe_skipped)
		tap_ok(1, "QUERY's answer before main() # SKIP the kernel was not asked "
			  "(LIBMEMBARRIER_HEAVY)");
	else if (st.kernel_errno != 0)
		tap_ok(1, "QUERY's answer before main() # SKIP the kernel's QUERY failed "
			  "(errno %d): nothing to publish", st.kernel_errno);
	else
		tap_ok((query_at_main & 0x80000000u) != 0,
		       "the constructor ran: QUERY's answer published before main() (0x%x)",
		       query_at_main);
	/* With the probe skipped the library has not asked the kernel: QUERY
	 * asks it now. */
	mask = membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
	tap_ok(mask >= 0 && (st.probe_skipped ||
			     mask == (st.kernel_commands | st.emulated_commands)),
	       "membarrier(QUERY) answers 0x%x", (unsigned int)mask);

	if (pthread_create(&t, NULL, spin, NULL) != 0)
		tap_bail("pthread_create failed");
	for (int i = 0; i < 100; i++)
		if (membarrier_heavy() != 0) {
			tap_diag("membarrier_heavy: %s", strerror(errno));
			failed = 1;
			break;
		}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	tap_ok(!failed, "membarrier_heavy() 100 times beside a thread in membarrier_light()");
#ifndef __mips__
	tap_ok(lmb_state() == 42 && lmb_kern_word == 7,
	       "the library's internal names are not the program's");
#else
	tap_ok(1, "the library's internal names # SKIP global on MIPS");
#endif
	return tap_exit();
}
