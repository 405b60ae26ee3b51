/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rw: an RCU-like reader/writer benchmark, the 2015 membarrier commit's
 * "operations in 10 s, 6 readers, 2 writers" table rebuilt over this
 * library.
 *
 *   rw-FLAVOUR READERS WRITERS SECONDS [LABEL]
 *
 * Readers loop on a read-side critical section that loads a shared pointer
 * and checks that the object is alive; writers publish a new object, wait
 * for a grace period and then poison the old one.  A reader that ever sees
 * a poisoned object counts a violation (there must be none).  The flavour
 * is chosen at compile time with RW_FLAVOUR:
 *
 *   RW_FENCE    a full fence on both sides, in every read_lock/unlock
 *   RW_STATIC   the light side a compiler barrier, as if the library knew
 *               at compile time that membarrier is there; membarrier_heavy()
 *   RW_RUNTIME  the shipped membarrier_light(), which tests at run time
 *               what the library detected; membarrier_heavy()
 *   RW_URCU     liburcu's memb flavour (urcu_memb_*), the peer
 *
 * The grace period of the first three is the classic one: readers publish
 * a snapshot of a counter in read_lock and clear it in read_unlock, each
 * followed or preceded by the light barrier; the writer issues the heavy
 * barrier, advances the counter, waits for every reader whose snapshot is
 * older, and issues the heavy barrier again.
 *
 * Besides reads per second, the readers' own CPU time gives nanoseconds
 * of CPU per read, which does not depend on how much of the machine other
 * jobs took: the figure to compare on a shared host.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RW_FENCE 1
#define RW_STATIC 2
#define RW_RUNTIME 3
#define RW_URCU 4

#ifndef RW_FLAVOUR
# error "build with -DRW_FLAVOUR=RW_FENCE, RW_STATIC, RW_RUNTIME or RW_URCU"
#endif

#if RW_FLAVOUR == RW_URCU
# define _LGPL_SOURCE
# include <urcu/urcu-memb.h>
#else
# include "membarrier.h"
#endif
#include "bench.h"

#define MAX_THREADS 256
#define NOBJ 4096

struct obj {
	int alive;
	long value;
};

struct reader {
	_Alignas(64) unsigned long snap;
	unsigned long reads;
	unsigned long bad;
	double cpu;		/* seconds of CPU time the reader used */
};

static struct obj pool[NOBJ];
static struct obj *current = &pool[0];
static struct reader readers[MAX_THREADS];
static unsigned long writes[MAX_THREADS];
static int nreaders;
static int go, stop;
#if RW_FLAVOUR != RW_URCU
static unsigned long gp_counter = 1;
#endif
static pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;

#if RW_FLAVOUR == RW_FENCE
# define LIGHT() __atomic_thread_fence(__ATOMIC_SEQ_CST)
# define HEAVY() __atomic_thread_fence(__ATOMIC_SEQ_CST)
# define FLAVOUR "fence"
#elif RW_FLAVOUR == RW_STATIC
# define LIGHT() __asm__ __volatile__("" : : : "memory")
# define HEAVY() heavy()
# define FLAVOUR "compile-time"
#elif RW_FLAVOUR == RW_RUNTIME
# define LIGHT() membarrier_light()
# define HEAVY() heavy()
# define FLAVOUR "run-time"
#elif RW_FLAVOUR == RW_URCU
# define FLAVOUR "liburcu-memb"
#endif

#if RW_FLAVOUR == RW_STATIC || RW_FLAVOUR == RW_RUNTIME
static void heavy(void)
{
	if (membarrier_heavy() != 0) {
		perror("membarrier_heavy");
		abort();
	}
}
#endif

#if RW_FLAVOUR == RW_URCU
static void read_lock(struct reader *r)
{
	(void)r;
	urcu_memb_read_lock();
}

static void read_unlock(struct reader *r)
{
	(void)r;
	urcu_memb_read_unlock();
}

static void synchronize(void)
{
	urcu_memb_synchronize_rcu();
}
#else
static inline void read_lock(struct reader *r)
{
	__atomic_store_n(&r->snap, __atomic_load_n(&gp_counter, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	LIGHT();
}

static inline void read_unlock(struct reader *r)
{
	LIGHT();
	__atomic_store_n(&r->snap, 0, __ATOMIC_RELAXED);
}

/* Called with writer_lock held: only one writer advances gp_counter. */
static void synchronize(void)
{
	unsigned long g;

	HEAVY();
	g = __atomic_load_n(&gp_counter, __ATOMIC_RELAXED) + 1;
	__atomic_store_n(&gp_counter, g, __ATOMIC_RELAXED);
	for (int i = 0; i < nreaders; i++) {
		unsigned long s;
		int spins = 0;

		while ((s = __atomic_load_n(&readers[i].snap, __ATOMIC_RELAXED)) != 0 && s < g)
			if (++spins % 64 == 0)
				sched_yield();
	}
	HEAVY();
}
#endif

static void wait_for_go(void)
{
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void *reader_thread(void *arg)
{
	struct reader *r = arg;
	unsigned long n = 0, bad = 0;
	double cpu0;

#if RW_FLAVOUR == RW_URCU
	urcu_memb_register_thread();
#endif
	wait_for_go();
	cpu0 = bench_thread_cpu();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		struct obj *p;

		read_lock(r);
		p = __atomic_load_n(&current, __ATOMIC_CONSUME);
		if (!__atomic_load_n(&p->alive, __ATOMIC_RELAXED))
			bad++;
		read_unlock(r);
		n++;
	}
	r->cpu = bench_thread_cpu() - cpu0;
	r->reads = n;
	r->bad = bad;
#if RW_FLAVOUR == RW_URCU
	urcu_memb_unregister_thread();
#endif
	return NULL;
}

static unsigned long next_obj = 1;

static void *writer_thread(void *arg)
{
	unsigned long *count = arg, n = 0;

	wait_for_go();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		struct obj *old, *new;

		pthread_mutex_lock(&writer_lock);
		new = &pool[next_obj++ % NOBJ];
		__atomic_store_n(&new->value, (long)next_obj, __ATOMIC_RELAXED);
		__atomic_store_n(&new->alive, 1, __ATOMIC_RELAXED);
		old = current;
		__atomic_store_n(&current, new, __ATOMIC_RELEASE);
		synchronize();
		__atomic_store_n(&old->alive, 0, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&writer_lock);
		n++;
	}
	*count = n;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[2 * MAX_THREADS];
	unsigned long reads = 0, bad = 0, nwrites = 0;
	int nwriters;
	double secs, t0, t, cpu = 0;
	const char *mech;

	if (argc < 4 || argc > 5 || atoi(argv[1]) < 1 || atoi(argv[1]) > MAX_THREADS ||
	    atoi(argv[2]) < 0 || atoi(argv[2]) > MAX_THREADS || atof(argv[3]) <= 0) {
		fprintf(stderr, "usage: %s READERS WRITERS SECONDS [LABEL]\n", argv[0]);
		return 2;
	}
	nreaders = atoi(argv[1]);
	nwriters = atoi(argv[2]);
	secs = atof(argv[3]);
	pool[0].alive = 1;

#if RW_FLAVOUR == RW_URCU
	mech = urcu_memb_has_sys_membarrier ? "membarrier" : "fence";
#elif RW_FLAVOUR == RW_FENCE
	mech = "fence";
#else
	{
		struct membarrier_strategy st;

		membarrier_get_strategy(&st, sizeof(st));
		mech = membarrier_mechanism_name(st.heavy);
# if RW_FLAVOUR == RW_STATIC
		/* A compiler barrier pairs only with a real process-wide barrier. */
		if (st.light_is_fence) {
			printf("RESULT label=%s skipped=no-process-wide-barrier\n",
			       argc > 4 ? argv[4] : FLAVOUR);
			return 0;
		}
# endif
	}
#endif

	for (int i = 0; i < nreaders; i++)
		pthread_create(&th[i], NULL, reader_thread, &readers[i]);
	for (int i = 0; i < nwriters; i++)
		pthread_create(&th[nreaders + i], NULL, writer_thread, &writes[i]);
	usleep(100000);
	t0 = bench_now();
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	/* The signal mechanism's signal cuts a sleep short (EINTR). */
	while ((t = bench_now() - t0) < secs)
		usleep((useconds_t)((secs - t) * 1e6) + 1);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	t = bench_now() - t0;
	for (int i = 0; i < nreaders + nwriters; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < nreaders; i++) {
		reads += readers[i].reads;
		bad += readers[i].bad;
		cpu += readers[i].cpu;
	}
	for (int i = 0; i < nwriters; i++)
		nwrites += writes[i];

	printf("RESULT label=%s flavour=%s mech=%s readers=%d writers=%d seconds=%.2f reads=%lu reads_per_s=%.4g reader_cpu_s=%.3f ns_per_read=%.4g writes=%lu writes_per_s=%.4g violations=%lu\n",
	       argc > 4 ? argv[4] : FLAVOUR, FLAVOUR, mech, nreaders, nwriters, t, reads,
	       (double)reads / t, cpu, reads ? cpu * 1e9 / (double)reads : 0.0, nwrites,
	       (double)nwrites / t, bad);
	return bad != 0;
}
