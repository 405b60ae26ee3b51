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
 * syscall() is no cancellation point), and never longer than a call of
 * the mechanism usually takes: a runner can be slow for reasons that have
 * nothing to do with the call (a SCHED_IDLE or nice 19 thread preempted
 * mid-call, one stopped by a debugger in non-stop mode, one starved by a
 * real-time thread), and a waiter must not inherit that.  The runner times
 * one call in 64 (and the call it makes for waiters, and every call while
 * nothing was timed yet); lmb_co.typ follows those times, a quarter of
 * the way each time, but up by at most a quarter of itself, so that a
 * stalled call's time barely moves it while the stalls are fewer than
 * half of the calls timed.  A waiter waits for the runner's progress for
 * 4 * typ + 50 us (the calls a waiter usually waits for, with their
 * spread, and the slack of a timed sleep, which is no shorter): at that
 * deadline, not served, it makes a call of its own (a call that starts
 * after its arrival is all it needs; it is timed too), unless a call ended
 * meanwhile: then the runner runs, and the call it runs now gets as long
 * (twice at most: the target is two calls away at most).  So a waiter
 * pays at most that patience for a runner that stopped, whatever stopped
 * it; when everyone runs, it is served by the runner as before, and a
 * waiter that wakes late because it had no CPU and finds itself served
 * makes none.
 *
 * A signal handler that calls membarrier_heavy() on the thread that runs
 * the call would wait for itself: the runner names itself in lmb_co.owner
 * (pthread_self(), which reads a register), and a caller that finds its
 * own name there, or none (the moment between the word and the name),
 * makes a call of its own.
 *
 * Children.  A child of fork() has only the forking thread: a call that
 * another thread of the parent had in flight is gone, and the child's
 * handler (registered by the constructor) ends it.  A child made without
 * the handlers (_Fork(), a raw fork or clone system call) inherits the
 * word with the call in flight and a runner that does not exist there:
 * before it sleeps, a waiter compares getpid() with lmb_co.pid, the
 * process that owns the word, and makes a call of its own when they
 * differ.  A child that shares our memory (vfork(), clone(CLONE_VM)
 * without CLONE_THREAD) differs too: it waits for nobody, and it runs no
 * shared call of the signal mechanism, whose barrier covers the caller's
 * own thread group (the parent's waiters would be served by a barrier
 * that missed their threads).  A kernel command covers every thread of
 * the memory map, the child's and the parent's: such a child may run
 * those for everyone, but where the command fails and the signal
 * mechanism serves instead (mechanism.c counts that), its call ends
 * without counting, and the waiters make the next.  Such a child killed
 * in the middle of a call leaves it in flight for good: from then on
 * every waiter waits its patience and makes its own call.
 *
 * The count of calls completed is 30 bits: a waiter measures the calls
 * since its arrival as an unsigned distance, so one stalled across 2^30
 * calls makes at most two more, never 2^29.
 */
#include "internal.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>
#include <linux/futex.h>
#if HAVE_DECL___LIBC_SINGLE_THREADED
# include <sys/single_threaded.h>
#endif

#define LMB_CO_RUNNING	UINT32_C(1)
#define LMB_CO_WAITERS	UINT32_C(2)
#define LMB_CO_ONE	UINT32_C(4)	/* one call completed */
#define LMB_CO_COUNT(w)	((w) & ~(LMB_CO_RUNNING | LMB_CO_WAITERS))
/* A runner times one call in LMB_CO_SAMPLE (a power of two). */
#define LMB_CO_SAMPLE	64
/* The patience before any call was timed, and the most typ may say. */
#define LMB_CO_FIRST_NS	1000000
#define LMB_CO_MAX_NS	(UINT32_C(1) << 30)
/* A waiter's patience: LMB_CO_PATIENCE calls and a timed sleep's slack. */
#define LMB_CO_PATIENCE	4
#define LMB_CO_SLACK_NS	50000

/* Its own cache lines: light-side readers read the flag next to it. */
static struct {
	uint32_t word;
	uint32_t alone;		/* calls made outside the word */
	uintptr_t owner;	/* the runner's pthread_self(), or 0 */
	uint32_t typ;		/* a call's usual time in ns, 0: none timed yet */
	uint32_t cut;		/* waits cut short by a call of one's own */
	uint32_t uncounted;	/* calls that ended without counting */
	int pid;		/* the process whose threads share the word */
	int off;		/* the tests' and benchmarks' switch */
	int patient;		/* tests: 1 wait without a bound, -1 hardly at all */
} lmb_co __attribute__((aligned(128)));

/* A call of the caller's own, not shared. */
static int lmb_co_alone(int mechanism)
{
	__atomic_fetch_add(&lmb_co.alone, 1, __ATOMIC_RELAXED);
	return lmb_mech_barrier(mechanism);
}

/* Fold a call's time into lmb_co.typ (see above); racing updates may
 * lose one, which costs nothing but a sample. */
static void lmb_co_learn(int64_t ns)
{
	uint32_t typ = __atomic_load_n(&lmb_co.typ, __ATOMIC_RELAXED), t;

	t = ns < 1 ? 1 : ns > (int64_t)LMB_CO_MAX_NS ? LMB_CO_MAX_NS : (uint32_t)ns;
	if (typ == 0)
		typ = t < LMB_CO_FIRST_NS ? t : LMB_CO_FIRST_NS;
	else if (t < typ)
		typ -= (typ - t) / 4;
	else	/* rounded up: a typ of 1 to 3 must be able to grow */
		typ += ((t - typ < typ ? t - typ : typ) + 3) / 4;
	if (typ > LMB_CO_MAX_NS)
		typ = LMB_CO_MAX_NS;
	__atomic_store_n(&lmb_co.typ, typ ? typ : 1, __ATOMIC_RELAXED);
}

/* How long a waiter waits for the runner's progress (see above). */
static int64_t lmb_co_patience(void)
{
	uint32_t typ = __atomic_load_n(&lmb_co.typ, __ATOMIC_RELAXED);

	if (__atomic_load_n(&lmb_co.patient, __ATOMIC_RELAXED) < 0)
		return 1;	/* the tests' impatient waiters */
	return typ ? LMB_CO_PATIENCE * (int64_t)typ + LMB_CO_SLACK_NS : LMB_CO_FIRST_NS;
}

/* A waiter's call of its own, after waiting as long as it may. */
static int lmb_co_own(int mechanism)
{
	int64_t t0 = lmb_now_ns();
	int ret;

	__atomic_fetch_add(&lmb_co.cut, 1, __ATOMIC_RELAXED);
	ret = lmb_co_alone(mechanism);
	lmb_co_learn(lmb_now_ns() - t0);
	return ret;
}

/* The process that owns the word: set by the constructor and the fork
 * handler, or by the first waiter where neither ran (the tests' copy). */
static int lmb_co_pid(void)
{
	int pid = __atomic_load_n(&lmb_co.pid, __ATOMIC_RELAXED), zero = 0;

	if (pid == 0 && !__atomic_compare_exchange_n(&lmb_co.pid, &zero, pid = (int)getpid(), 0,
						     __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		pid = zero;
	return pid;
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
	int again = 1, timed;

	/* One call in LMB_CO_SAMPLE by its count, and every call until one was. */
	timed = (LMB_CO_COUNT(word) / LMB_CO_ONE) % LMB_CO_SAMPLE == 0 ||
		__atomic_load_n(&lmb_co.typ, __ATOMIC_RELAXED) == 0;
	__atomic_store_n(&lmb_co.owner, self, __ATOMIC_RELAXED);
	for (;;) {
		uint32_t fell = __atomic_load_n(&lmb_mech_fallbacks, __ATOMIC_RELAXED);
		int64_t t0 = timed ? lmb_now_ns() : 0;

		(void)lmb_mech_barrier(mechanism);
		/*
		 * A kernel command failed and the signal mechanism served
		 * instead, in a child sharing our memory: its barrier missed
		 * the parent's threads.  The call ends without counting; the
		 * waiters wake and make the next one.
		 */
		if (__atomic_load_n(&lmb_mech_fallbacks, __ATOMIC_RELAXED) != fell &&
		    (int)getpid() != lmb_co_pid()) {
			__atomic_fetch_add(&lmb_co.uncounted, 1, __ATOMIC_RELAXED);
			__atomic_store_n(&lmb_co.owner, 0, __ATOMIC_RELAXED);
			word = LMB_CO_COUNT(__atomic_load_n(&lmb_co.word, __ATOMIC_RELAXED));
			word = __atomic_exchange_n(&lmb_co.word, word, __ATOMIC_SEQ_CST);
			if (word & LMB_CO_WAITERS)
				(void)lmb_syscall(SYS_futex, (long)&lmb_co.word, FUTEX_WAKE_PRIVATE,
						  INT_MAX, 0);
			return;
		}
		if (timed)
			lmb_co_learn(lmb_now_ns() - t0);
		timed = 1;	/* the call for the waiters: they pay far more */
		word = __atomic_load_n(&lmb_co.word, __ATOMIC_RELAXED);
		if (!((word & LMB_CO_WAITERS) && again-- &&
		      __atomic_compare_exchange_n(&lmb_co.word, &word,
						  ((word | LMB_CO_RUNNING | LMB_CO_WAITERS) + 1) |
						  LMB_CO_RUNNING | LMB_CO_WAITERS, 0,
						  __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)))
			break;
	}
	__atomic_store_n(&lmb_co.owner, 0, __ATOMIC_RELAXED);
	word = __atomic_exchange_n(&lmb_co.word, (word | LMB_CO_RUNNING | LMB_CO_WAITERS) + 1,
				   __ATOMIC_SEQ_CST);
	if (word & LMB_CO_WAITERS)
		(void)lmb_syscall(SYS_futex, (long)&lmb_co.word, FUTEX_WAKE_PRIVATE, INT_MAX, 0);
}

int lmb_coalesce(int mechanism)
{
	uintptr_t self = (uintptr_t)pthread_self(), owner;
	uint32_t word, start, need, seen = 0;
	int64_t deadline = 0, now;

	if (!lmb_mech_shared(mechanism) || __atomic_load_n(&lmb_co.off, __ATOMIC_RELAXED))
		return lmb_co_alone(mechanism);
	if (lmb_co_single()) {
		__atomic_store_n(&lmb_co.alone, __atomic_load_n(&lmb_co.alone, __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELAXED);
		return lmb_mech_barrier(mechanism);
	}
	/* The signal mechanism's barrier covers the caller's thread group:
	 * a child that shares our memory must not run it for us (see above). */
	if (lmb_mech_command(mechanism) == 0 && (int)getpid() != lmb_co_pid())
		return lmb_co_alone(mechanism);
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
	start = LMB_CO_COUNT(word);
	need = (word & LMB_CO_RUNNING) ? 2 * LMB_CO_ONE : LMB_CO_ONE;
	while (LMB_CO_COUNT(word) - start < need) {
		if (!(word & LMB_CO_RUNNING)) {
			/* The call it starts now began after it arrived: it is
			 * served by it, counted or not (lmb_co_run()). */
			if (__atomic_compare_exchange_n(&lmb_co.word, &word, word | LMB_CO_RUNNING,
							0, __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE)) {
				lmb_co_run(mechanism, word | LMB_CO_RUNNING, self);
				return 0;
			}
			continue;
		}
		owner = __atomic_load_n(&lmb_co.owner, __ATOMIC_RELAXED);
		if (owner == 0 || owner == self)
			return lmb_co_alone(mechanism);	/* see above */
		now = lmb_now_ns();
		if (deadline == 0) {
			/* A child without fork handlers, or one sharing our memory. */
			if ((int)getpid() != lmb_co_pid())
				return lmb_co_alone(mechanism);
			seen = LMB_CO_COUNT(word);
			deadline = now + lmb_co_patience();
		} else if (now >= deadline &&
			   __atomic_load_n(&lmb_co.patient, __ATOMIC_RELAXED) <= 0) {
			/* The runner ended a call meanwhile: it runs, and the
			 * call it runs now gets as long (twice at most: the
			 * target is two calls away at most). */
			if (LMB_CO_COUNT(word) == seen)
				return lmb_co_own(mechanism);
			seen = LMB_CO_COUNT(word);
			deadline = now + lmb_co_patience();
		}
		if ((word & LMB_CO_WAITERS) ||
		    __atomic_compare_exchange_n(&lmb_co.word, &word, word | LMB_CO_WAITERS, 0,
						__ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE))
			lmb_futex_wait(&lmb_co.word, word | LMB_CO_WAITERS,
				       __atomic_load_n(&lmb_co.patient, __ATOMIC_RELAXED) > 0 ?
				       0 : deadline - now);
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
	__atomic_store_n(&lmb_co.pid, (int)getpid(), __ATOMIC_RELAXED);
}

/* From the constructor: pthread_atfork() is not async-signal-safe. */
void lmb_coalesce_prepare(void)
{
	__atomic_store_n(&lmb_co.pid, (int)getpid(), __ATOMIC_RELAXED);
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

/* The waits cut short by a call of the waiter's own, and the tests'
 * patience: 1 waits without a bound, as 1.5 did (the control), -1 cuts
 * every wait at once (the litmus test of the waiters' own calls). */
uint32_t lmb_coalesce_cut(void)
{
	return __atomic_load_n(&lmb_co.cut, __ATOMIC_RELAXED);
}

uint32_t lmb_coalesce_uncounted(void)
{
	return __atomic_load_n(&lmb_co.uncounted, __ATOMIC_RELAXED);
}

uintptr_t lmb_coalesce_owner(void)
{
	return __atomic_load_n(&lmb_co.owner, __ATOMIC_RELAXED);
}

void lmb_coalesce_patient(int on)
{
	__atomic_store_n(&lmb_co.patient, on, __ATOMIC_RELAXED);
}
