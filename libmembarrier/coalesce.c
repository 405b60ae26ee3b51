/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Concurrent heavy barriers share one call of the mechanism.
 *
 * Since CVE-2024-26602 the kernel serialises the expedited commands on
 * one mutex, and the signal mechanism interrupts every thread once per
 * call: N threads that call membarrier_heavy() at once would queue for N
 * calls.  A caller does not need a call of its own, only one that
 * started after it arrived: every thread passes a full barrier during
 * that call, after the caller's accesses before membarrier_heavy().  A
 * call already in flight when it arrives may have started before them,
 * so it does not count; the next one does.
 *
 * One 32-bit word (lock-free on every Debian architecture, and a futex):
 *   bit  0     a call is in flight; whoever set it runs the call
 *   bit  1     someone sleeps until the call ends
 *   bits 2-31  the calls completed
 * A caller that finds no call in flight starts one with a
 * compare-and-swap and makes it (a lone caller does only that: two atomic
 * operations around the call).  Any other caller reads the word after a
 * full fence.  With no call in flight and C calls completed, it needs the
 * call that completes C + 1, which starts with a compare-and-swap after
 * that read; with one in flight, the call after it, C + 2.  The caller
 * that finds no call in flight and its target not reached starts the next
 * call; the others sleep on the word, which changes when the call ends.
 * The argument is one about sequentially consistent fences: the caller's
 * fence, before its read, comes before the runner's compare-and-swap (the
 * read saw the word before it), which comes before the full barrier that
 * each shared mechanism executes first (the kernel's smp_mb() on entry to
 * the expedited commands, the signal mechanism's fence), which comes
 * before each thread's barrier in the call; the runner's release at the
 * end, and the caller's fence after reading it, order the rest.  The
 * runner itself needs no fence of its own: its accesses before the call
 * precede that first barrier, and the mechanism ends with one too (the
 * kernel's smp_mb() on exit; the handlers' release, which the signal
 * mechanism reads with acquire).
 *
 * Waiting sleeps on the futex (no spinning; a futex wait made with
 * syscall() is no cancellation point).  A signal handler that calls
 * membarrier_heavy() on the thread that runs the call would wait for
 * itself: the runner names itself in lmb_co.owner (pthread_self(), which
 * reads a register), and a caller that finds its own name there, or
 * none (the moment between the word and the name), makes a call of its
 * own.  A child of fork() has only the forking thread: a call that
 * another thread of the parent had in flight is gone, and the child's
 * handler (registered by the constructor) ends it.
 */
#include "internal.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <linux/futex.h>
#if HAVE_DECL___LIBC_SINGLE_THREADED
# include <sys/single_threaded.h>
#endif

#define LMB_CO_RUNNING	UINT32_C(1)
#define LMB_CO_WAITERS	UINT32_C(2)
#define LMB_CO_ONE	UINT32_C(4)	/* one call completed */

/* Its own cache lines: light-side readers read the flag next to it. */
static struct {
	uint32_t word;
	uint32_t alone;		/* calls made outside the word */
	uintptr_t owner;	/* the runner's pthread_self(), or 0 */
	int off;		/* the tests' and benchmarks' switch */
} lmb_co __attribute__((aligned(128)));

/* A call of the caller's own, not shared. */
static int lmb_co_alone(int mechanism)
{
	__atomic_fetch_add(&lmb_co.alone, 1, __ATOMIC_RELAXED);
	return lmb_mech_barrier(mechanism);
}

/*
 * A process that never created a thread (glibc's __libc_single_threaded,
 * which stays 0 once one was) has nobody to share a call with: its calls
 * skip the word's two atomic operations, which are a fifth of the cost
 * where the call itself is nearly free (the kernel answers a process of
 * one thread, or a machine of one CPU, at once).  A signal handler that
 * interrupts the call makes one of its own, as it would above.  The
 * count is a plain increment: one thread (a handler may lose one).
 */
static int lmb_co_single(void)
{
#if HAVE_DECL___LIBC_SINGLE_THREADED
	return __libc_single_threaded;
#else
	return 0;
#endif
}

static int lmb_co_reached(uint32_t word, uint32_t target)
{
	return (int32_t)((word & ~(LMB_CO_RUNNING | LMB_CO_WAITERS)) - target) >= 0;
}

/*
 * Run the call as the one that set LMB_CO_RUNNING in word; end it.  If
 * callers went to sleep during the call, they need the next one: run it
 * at once, for them, before waking them (ending this call and starting
 * that one in one compare-and-swap, after their arrival), so that they
 * wake once, served, rather than wake to find the next call still to
 * make.  One such call at most: the runner's own wait stays two calls.
 */
static void lmb_co_run(int mechanism, uint32_t word, uintptr_t self)
{
	int again = 1;

	__atomic_store_n(&lmb_co.owner, self, __ATOMIC_RELAXED);
	do {
		(void)lmb_mech_barrier(mechanism);
		word = __atomic_load_n(&lmb_co.word, __ATOMIC_RELAXED);
	} while ((word & LMB_CO_WAITERS) && again-- &&
		 __atomic_compare_exchange_n(&lmb_co.word, &word,
					     ((word | LMB_CO_RUNNING | LMB_CO_WAITERS) + 1) |
					     LMB_CO_RUNNING | LMB_CO_WAITERS, 0,
					     __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	__atomic_store_n(&lmb_co.owner, 0, __ATOMIC_RELAXED);
	word = __atomic_exchange_n(&lmb_co.word, (word | LMB_CO_RUNNING | LMB_CO_WAITERS) + 1,
				   __ATOMIC_SEQ_CST);
	if (word & LMB_CO_WAITERS)
		(void)lmb_syscall(SYS_futex, (long)&lmb_co.word, FUTEX_WAKE_PRIVATE, INT_MAX, 0);
}

int lmb_coalesce(int mechanism)
{
	uintptr_t self = (uintptr_t)pthread_self(), owner;
	uint32_t word, target;

	if (!lmb_mech_shared(mechanism) || __atomic_load_n(&lmb_co.off, __ATOMIC_RELAXED))
		return lmb_co_alone(mechanism);
	if (lmb_co_single()) {
		__atomic_store_n(&lmb_co.alone, __atomic_load_n(&lmb_co.alone, __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELAXED);
		return lmb_mech_barrier(mechanism);
	}
	/* No call in flight: start one and make it (see above). */
	word = __atomic_load_n(&lmb_co.word, __ATOMIC_RELAXED);
	if (!(word & LMB_CO_RUNNING) &&
	    __atomic_compare_exchange_n(&lmb_co.word, &word, word | LMB_CO_RUNNING, 0,
					__ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
		lmb_co_run(mechanism, word | LMB_CO_RUNNING, self);
		return 0;
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	word = __atomic_load_n(&lmb_co.word, __ATOMIC_SEQ_CST);
	target = (word & ~(LMB_CO_RUNNING | LMB_CO_WAITERS)) +
		 ((word & LMB_CO_RUNNING) ? 2 * LMB_CO_ONE : LMB_CO_ONE);
	while (!lmb_co_reached(word, target)) {
		if (!(word & LMB_CO_RUNNING)) {
			if (__atomic_compare_exchange_n(&lmb_co.word, &word, word | LMB_CO_RUNNING,
							0, __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE)) {
				lmb_co_run(mechanism, word | LMB_CO_RUNNING, self);
				word = __atomic_load_n(&lmb_co.word, __ATOMIC_ACQUIRE);
			}
			continue;
		}
		owner = __atomic_load_n(&lmb_co.owner, __ATOMIC_RELAXED);
		if (owner == 0 || owner == self)
			return lmb_co_alone(mechanism);	/* see above */
		if ((word & LMB_CO_WAITERS) ||
		    __atomic_compare_exchange_n(&lmb_co.word, &word, word | LMB_CO_WAITERS, 0,
						__ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE))
			(void)lmb_syscall(SYS_futex, (long)&lmb_co.word, FUTEX_WAIT_PRIVATE,
					  (long)(word | LMB_CO_WAITERS), 0);
		word = __atomic_load_n(&lmb_co.word, __ATOMIC_ACQUIRE);
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return 0;
}

/* A child of fork(): the call another thread had in flight is over. */
static void lmb_co_atfork_child(void)
{
	uint32_t word = __atomic_load_n(&lmb_co.word, __ATOMIC_RELAXED);

	if (word & LMB_CO_RUNNING)
		__atomic_store_n(&lmb_co.word, (word | LMB_CO_RUNNING | LMB_CO_WAITERS) + 1,
				 __ATOMIC_RELAXED);
	__atomic_store_n(&lmb_co.owner, 0, __ATOMIC_RELAXED);
}

/* From the constructor: pthread_atfork() is not async-signal-safe. */
void lmb_coalesce_prepare(void)
{
	(void)pthread_atfork(NULL, NULL, lmb_co_atfork_child);
}

/* The calls made so far, and the switch (tests and benchmarks). */
uint32_t lmb_coalesce_calls(void)
{
	return (__atomic_load_n(&lmb_co.word, __ATOMIC_RELAXED) >> 2) +
	       __atomic_load_n(&lmb_co.alone, __ATOMIC_RELAXED);
}

void lmb_coalesce_set(int on)
{
	__atomic_store_n(&lmb_co.off, !on, __ATOMIC_RELAXED);
}
