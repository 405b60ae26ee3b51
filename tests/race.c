/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Many threads racing on first use.  Links the library's internal copy,
 * which has no constructor and can be reset, so that first use really
 * happens in the racing threads, again and again.
 *
 * The waiting threads yield while they spin: with more threads than CPUs
 * (8 on a 2-CPU machine), a pure spin makes every round wait for the
 * scheduler to preempt each spinner in turn, which under a sanitizer on
 * a loaded machine took minutes.  The threads still leave the start line
 * together: they are all runnable and see `go' within a time slice.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "tap.h"
#include "testlib.h"
#include "testing.h"

#define NTHREADS 8
#define ROUNDS 200

static int go, arrived;
static int query_result[NTHREADS], heavy_result[NTHREADS];

static void *racer(void *arg)
{
	int i = (int)(long)arg;

	__atomic_fetch_add(&arrived, 1, __ATOMIC_ACQ_REL);
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		sched_yield();
	if (i % 2)
		query_result[i] = membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
	else
		heavy_result[i] = membarrier_heavy();
	membarrier_light();
	return NULL;
}

int main(void)
{
	int expected = -1, bad_query = 0, bad_heavy = 0, bad_light = 0, bad_state = 0;
	struct membarrier_strategy first, st;

	tap_plan(4);
	for (int round = 0; round < ROUNDS; round++) {
		pthread_t t[NTHREADS];

		lmb_test_reset();
		go = 0;
		arrived = 0;
		for (int i = 0; i < NTHREADS; i++)
			if (pthread_create(&t[i], NULL, racer, (void *)(long)i) != 0)
				tap_bail("pthread_create: %s", strerror(errno));
		while (__atomic_load_n(&arrived, __ATOMIC_ACQUIRE) < NTHREADS)
			sched_yield();
		__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
		for (int i = 0; i < NTHREADS; i++)
			pthread_join(t[i], NULL);

		for (int i = 1; i < NTHREADS; i += 2) {
			if (expected < 0)
				expected = query_result[i];
			bad_query += query_result[i] != expected;
		}
		for (int i = 0; i < NTHREADS; i += 2)
			bad_heavy += heavy_result[i] != 0;
		membarrier_get_strategy(&st, sizeof(st));
		if (round == 0)
			first = st;
		bad_state += memcmp(&st, &first, sizeof(st)) != 0;
		bad_light += __atomic_load_n(&libmembarrier_light_fence, __ATOMIC_RELAXED) !=
			     st.light_is_fence;
	}
	tap_diag("QUERY 0x%x, heavy %s", (unsigned int)expected,
		 membarrier_mechanism_name(first.heavy));
	tap_ok(expected >= 0 && bad_query == 0,
	       "%d rounds of %d threads: every racing QUERY got the same answer", ROUNDS,
	       NTHREADS / 2);
	tap_ok(bad_heavy == 0, "every racing first heavy() succeeded (%d failed)", bad_heavy);
	tap_ok(bad_state == 0, "every round published the same strategy");
	tap_ok(bad_light == 0, "the light flag matches the strategy after every round");
	return tap_exit();
}
