/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The signal mechanism's slot table and its handler: what a barrier in
 * progress publishes, and what the handler on each target thread does
 * with it.  Calls only sys.c and die.c.
 */
#include "sig.h"

#include <string.h>
#include <linux/futex.h>
#if defined(__x86_64__) || defined(__i386__)
# include <cpuid.h>
#endif

struct lmb_slot lmb_slots[LMB_SLOTS];

/* The slots in use so far: 1 + the highest index taken (slots are taken
 * lowest first), so that the handler looks at those only. */
static int lmb_slots_high;

int lmb_signal_can_sync_core(void)
{
	return LMB_HAVE_SYNC_CORE;
}

void lmb_serialise(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned int a, b, c, d;

	/* CPUID is architecturally serialising in every mode. */
	__cpuid(0, a, b, c, d);
	__asm__ __volatile__("" : : "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
#elif defined(__aarch64__)
	__asm__ __volatile__("isb" : : : "memory");
#endif
}


/*
 * The signal comes from tgkill(), the call that setup probed
 * (sig-choose.c), and carries nothing: the handler finds its thread id in
 * every slot in use and serves each barrier that lists it.  Any run of
 * the handler is a barrier for its thread (it reads each slot's
 * generation after the signal was sent), so one from elsewhere does no
 * harm.
 *
 * Not instrumented by AddressSanitizer: the signal can reach a thread
 * that is still starting, before ASan has cleared the shadow of a stack
 * the C library reused from an exited thread, and ASan then reports the
 * handler's accesses to its frame (on that stack) as bad ones.
 */
#if defined(__SANITIZE_ADDRESS__)
__attribute__((no_sanitize_address))
#endif
void lmb_signal_handler(int sig, siginfo_t *si, void *uc)
{
	pid_t self;
	int high;

	(void)sig;
	(void)si;
	(void)uc;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	high = __atomic_load_n(&lmb_slots_high, __ATOMIC_ACQUIRE);
	self = lmb_gettid();
	for (int s = 0; s < high && s < LMB_SLOTS; s++) {
		struct lmb_slot *slot = &lmb_slots[s];
		unsigned int gen = __atomic_load_n(&slot->gen, __ATOMIC_ACQUIRE);
		int count = __atomic_load_n(&slot->count, __ATOMIC_RELAXED);
		int mine = 0;

		for (int i = 0; i < count && i < LMB_BATCH; i++) {
			unsigned int cur;

			if (__atomic_load_n(&slot->tid[i], __ATOMIC_RELAXED) != self)
				continue;
			if (!mine && __atomic_load_n(&slot->sync_core, __ATOMIC_RELAXED))
				lmb_serialise();
			mine = 1;
			/* Forward only: a late handler that read an older
			 * generation must not erase a newer one. */
			cur = __atomic_load_n(&slot->done[i], __ATOMIC_RELAXED);
			while ((int)(gen - cur) > 0 &&
			       !__atomic_compare_exchange_n(&slot->done[i], &cur, gen, 1,
							    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
				;
		}
		if (!mine)
			continue;
		/* Wake the owner if it sleeps on seq (lmb_wait()). */
		__atomic_fetch_add(&slot->seq, 1, __ATOMIC_SEQ_CST);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&slot->waiting, __ATOMIC_RELAXED))
			(void)lmb_syscall(SYS_futex, (long)&slot->seq, FUTEX_WAKE_PRIVATE, 1, 0);
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

struct lmb_slot *lmb_slot_get(int *index)
{
	for (;;) {
		for (int i = 0; i < LMB_SLOTS; i++) {
			if (!__atomic_exchange_n(&lmb_slots[i].busy, 1, __ATOMIC_ACQUIRE)) {
				int high = __atomic_load_n(&lmb_slots_high, __ATOMIC_RELAXED);

				/* Before any signal of this slot's barrier. */
				while (high <= i &&
				       !__atomic_compare_exchange_n(&lmb_slots_high, &high, i + 1,
								    1, __ATOMIC_RELEASE,
								    __ATOMIC_RELAXED))
					;
				*index = i;
				return &lmb_slots[i];
			}
		}
		lmb_pause(0);
	}
}

/* Slot index itself, when it is free; waits up to limit_ns (its owner
 * is a barrier, which ends within its own limits). */
struct lmb_slot *lmb_slot_wait(int index, int64_t limit_ns)
{
	int64_t start = lmb_now_ns();

	for (unsigned int round = 0;; round++) {
		if (!__atomic_exchange_n(&lmb_slots[index].busy, 1, __ATOMIC_ACQUIRE))
			return &lmb_slots[index];
		if (lmb_now_ns() - start > limit_ns)
			lmb_die("membarrier_heavy: no descriptor is free, and the barrier "
				"in slot %ld that has one did not end in %ld s", index,
				(long)(limit_ns / 1000000000));
		lmb_pause(round < 64 ? round : 64);
	}
}

/* Give the slot back, for the next barrier. */
void lmb_slot_put(struct lmb_slot *slot)
{
	__atomic_store_n(&slot->count, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->busy, 0, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* A child of fork() has one thread: barriers other threads had under way
 * in the parent do not exist in it. */
void lmb_slots_reset(void)
{
	memset(lmb_slots, 0, sizeof(lmb_slots));
	lmb_slots_high = 0;
}
