/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/light.c's read-side critical section, shared with the loops of
 * bench/light-optin.c, which are compiled with
 * LIBMEMBARRIER_LIGHT_COMPILER_BARRIER (a macro for the whole translation
 * unit).  Each translation unit has its own copy of the data.
 */
#ifndef LIBMEMBARRIER_BENCH_LIGHT_H
#define LIBMEMBARRIER_BENCH_LIGHT_H

struct obj {
	int alive;
	long value;
};

static struct obj pool[2] = { { 1, 0 }, { 1, 0 } };
static struct obj *current = &pool[0];
static unsigned long gp_counter = 1;
static _Alignas(64) unsigned long snap;

#define COMPILER_BARRIER() __asm__ __volatile__("" : : : "memory")
#define FENCE() __atomic_thread_fence(__ATOMIC_SEQ_CST)

/* One read-side critical section, as in bench/rw.c. */
#define READ_ONE(BARRIER, bad)                                                       \
	do {                                                                         \
		struct obj *p_;                                                      \
		__atomic_store_n(&snap, __atomic_load_n(&gp_counter, __ATOMIC_RELAXED), \
				 __ATOMIC_RELAXED);                                  \
		BARRIER;                                                             \
		p_ = __atomic_load_n(&current, __ATOMIC_CONSUME);                    \
		if (!__atomic_load_n(&p_->alive, __ATOMIC_RELAXED))                  \
			(bad)++;                                                     \
		BARRIER;                                                             \
		__atomic_store_n(&snap, 0, __ATOMIC_RELAXED);                        \
	} while (0)

#define NOINLINE __attribute__((noinline))

/* bench/light-optin.c: the barrier, light and call- loops again, with
 * membarrier_light() opted in. */
unsigned long loop_optin_barrier(unsigned long n);
unsigned long loop_call_optin_barrier(unsigned long n);
unsigned long loop_optin(unsigned long n);
unsigned long loop_call_optin(unsigned long n);
unsigned long read_optin(void);

#endif
