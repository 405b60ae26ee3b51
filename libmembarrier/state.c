/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Detection: ask the kernel once (MEMBARRIER_CMD_QUERY), choose the heavy
 * mechanism, register for it, and publish the result.  The kernel promises
 * that QUERY's answer, and the ENOSYS or EINVAL of any command with flags 0,
 * stay the same until reboot, which is what makes the cache valid for the
 * life of the process (and of its forked children: registrations follow
 * the mm, which fork copies).  exec clears the registrations, but exec also
 * reloads the library.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint32_t lmb_kern_word, lmb_lib_word;
uint32_t lmb_fast_word;

/*
 * The order of preference, best first:
 *
 * PRIVATE_EXPEDITED interrupts only the CPUs that run a thread of this
 *   process, never blocks, and needs one registration: the cheapest correct
 *   barrier, for us and for everyone else on the machine.
 * SHARED_EXPEDITED (patched kernels) interrupts every CPU running a user
 *   thread: still fast, but other processes pay for it and the kernel may
 *   rate-limit it.  It needs no registration, so it serves where the
 *   registration for PRIVATE_EXPEDITED was refused.
 * GLOBAL waits for an RCU grace period: milliseconds, but correct and free
 *   of side effects (absent under nohz_full, where QUERY hides it).
 * SIGNAL needs no kernel support (see sig.h) but interrupts every thread
 *   with a signal, which can make some system calls fail with EINTR.
 * FENCE is no process-wide barrier at all: heavy and light both become
 *   sequentially consistent fences, which pair correctly but give the light
 *   side no advantage.
 *
 * GLOBAL_EXPEDITED is not used: it reaches only processes registered for
 * it, and a registration lost across a checkpoint/restore would make it
 * return 0 without reaching our threads; PRIVATE_EXPEDITED answers EPERM
 * in that case, which we can repair.
 */
static const int lmb_order[] = {
	MEMBARRIER_MECHANISM_PRIVATE_EXPEDITED,
	MEMBARRIER_MECHANISM_SHARED_EXPEDITED,
	MEMBARRIER_MECHANISM_GLOBAL,
	MEMBARRIER_MECHANISM_SIGNAL,
	MEMBARRIER_MECHANISM_FENCE,
};

static int lmb_env_mechanism(int *invalid)
{
	const char *env = secure_getenv("LIBMEMBARRIER_HEAVY");

	*invalid = 0;
	if (env == NULL || env[0] == '\0' || strcmp(env, "auto") == 0)
		return 0;
	for (int m = 1; m <= lmb_mech_count(); m++)
		if (strcmp(env, membarrier_mechanism_name(m)) == 0)
			return m;
	*invalid = 1;
	return 0;
}

static int lmb_env_signal(void)
{
	const char *env = secure_getenv("LIBMEMBARRIER_SIGNAL");
	char *end;
	long sig;

	if (env == NULL || env[0] == '\0')
		return 0;
	sig = strtol(env, &end, 10);
	if (*end != '\0' || sig < SIGRTMIN || sig > SIGRTMAX)
		return 0;
	return (int)sig;
}

/*
 * What a membarrier(2) that a seccomp filter trapped (SECCOMP_RET_TRAP)
 * stands for: no membarrier, as where the kernel has none, so that no
 * later call of the library's own makes it trap again (sigsys.c).
 */
#define LMB_K_TRAPPED (LMB_K_VALID | LMB_K_FAILED | ENOSYS)

/* QUERY, as the kernel word (under the guard of sigsys.c). */
static uint32_t lmb_query_word(void)
{
	int ret = lmb_sys_membarrier(MEMBARRIER_CMD_QUERY, 0, 0);

	if (lmb_sigsys_trapped())
		return LMB_K_TRAPPED;
	/*
	 * The kernel answers QUERY with a mask, never with an error (flags is
	 * 0); ENOSYS means no membarrier (before 4.3, or CONFIG_MEMBARRIER=n),
	 * and ENOSYS or EPERM a seccomp filter or an emulator.  Any failure
	 * means the kernel offers nothing.
	 */
	/*
	 * Bit 10 is MEMBARRIER_CMD_SHARED_EXPEDITED only on kernels with this
	 * project's series, which shows its sysctl; a kernel without it may
	 * give the bit another meaning, so the library neither shows it nor
	 * passes it on there.
	 */
	if (ret >= 0 && (ret & MEMBARRIER_CMD_SHARED_EXPEDITED) && !lmb_series_signature())
		ret &= ~MEMBARRIER_CMD_SHARED_EXPEDITED;
	if (ret >= 0)
		return LMB_K_VALID | ((uint32_t)ret & LMB_K_MASK);
	return LMB_K_VALID | LMB_K_FAILED | ((uint32_t)-ret & 0xffff);
}

/* Publish fresh in *word unless it holds expected no more; returns what
 * the word holds then. */
static uint32_t lmb_publish_word(uint32_t *word, uint32_t expected, uint32_t fresh)
{
	if (__atomic_compare_exchange_n(word, &expected, fresh, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		return fresh;
	return expected;
}

int lmb_kernel_query(void)
{
	lmb_state_t st;

	st.kern = __atomic_load_n(&lmb_kern_word, __ATOMIC_ACQUIRE);
	if (st.kern == 0) {
		(void)lmb_state();
		st.kern = __atomic_load_n(&lmb_kern_word, __ATOMIC_ACQUIRE);
	}
	/* LIBMEMBARRIER_HEAVY=signal|fence: the application asks, now. */
	if (st.kern & LMB_K_UNASKED) {
		struct lmb_sigsys_guard g;
		uint32_t fresh;

		lmb_sigsys_enter(&g);
		fresh = lmb_query_word();
		lmb_sigsys_leave(&g);
		st.kern = lmb_publish_word(&lmb_kern_word, st.kern, fresh);
	}
	return st.kern & LMB_K_FAILED ? -lmb_st_kerrno(st) : lmb_st_kmask(st);
}

/* The heavy mechanism for the kernel word kern: the one asked for where
 * it can serve, else the first of lmb_order that can. */
static int lmb_choose(uint32_t kern, int forced, int skipped, int sig)
{
	lmb_state_t st = { kern, 0 };
	int kmask = lmb_st_kmask(st), heavy = 0, cmd;

	if (forced && lmb_mech_setup(forced, kmask, skipped, sig))
		heavy = forced;
	for (size_t i = 0; !heavy; i++)
		if (lmb_mech_setup(lmb_order[i], kmask, skipped, sig))
			heavy = lmb_order[i];
	/*
	 * The barrier's own command, once, with flags the kernel refuses
	 * (EINVAL, before it does anything): a filter that traps it traps
	 * now, under the guard, rather than at the first barrier.  GLOBAL's
	 * and SHARED_EXPEDITED's set-up issue no command (GLOBAL serves on
	 * riscv64 before Linux 6.9 even where PRIVATE_EXPEDITED answers),
	 * and PRIVATE_EXPEDITED's registration tells nothing of a filter
	 * that traps the barrier only.
	 */
	cmd = lmb_mech_command(heavy);
	if (cmd != 0 && !skipped)
		(void)lmb_sys_membarrier(cmd, ~0u, 0);
	return heavy;
}

static lmb_state_t lmb_probe(void)
{
	int invalid, forced = lmb_env_mechanism(&invalid);
	int skipped = forced == MEMBARRIER_MECHANISM_SIGNAL ||
		      forced == MEMBARRIER_MECHANISM_FENCE;
	int kmask, sig = lmb_env_signal(), heavy;
	struct lmb_sigsys_guard g;
	uint32_t fresh;
	lmb_state_t st;

	/*
	 * With the probe skipped the library never calls membarrier(2)
	 * itself (a seccomp filter may kill for it); otherwise every call it
	 * makes here is under the guard of sigsys.c, and a trap of any of
	 * them (QUERY, a registration, a barrier's command) stands for a
	 * kernel without membarrier(2).  So the kernel word is published
	 * after the mechanism's set-up, and the library word, derived from
	 * the kernel word that won, after it.
	 */
	if (!skipped)
		lmb_sigsys_enter(&g);
	st.kern = __atomic_load_n(&lmb_kern_word, __ATOMIC_ACQUIRE);
	if (st.kern != 0) {
		heavy = lmb_choose(st.kern, forced, skipped, sig);
	} else {
		fresh = skipped ? LMB_K_VALID | LMB_K_UNASKED : lmb_query_word();
		heavy = lmb_choose(fresh, forced, skipped, sig);
		if (lmb_sigsys_trapped() && fresh != LMB_K_TRAPPED) {
			fresh = LMB_K_TRAPPED;
			heavy = lmb_choose(fresh, forced, skipped, sig);
		}
		st.kern = lmb_publish_word(&lmb_kern_word, 0, fresh);
		if (st.kern != fresh)
			heavy = lmb_choose(st.kern, forced, skipped, sig);
	}
	if (!skipped)
		lmb_sigsys_leave(&g);
	kmask = lmb_st_kmask(st);

	/* The signal itself lives in sig-choose.c: it can change at run time. */
	st.lib = LMB_L_VALID | (uint32_t)heavy;
	if (skipped)
		st.lib |= LMB_L_SKIPPED;
	if (invalid)
		st.lib |= LMB_L_ENV_INVALID;
	/*
	 * Where the kernel has no PRIVATE_EXPEDITED_SYNC_CORE (and so, in
	 * practice, no membarrier at all), the signal handler serialises the
	 * core on the architectures where it can (sig-slot.c).
	 */
	if (heavy == MEMBARRIER_MECHANISM_SIGNAL && !skipped && lmb_mech_can_sync_core() &&
	    !(kmask & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE))
		st.lib |= LMB_L_SYNC_CORE;
	/*
	 * Where the kernel lacks PRIVATE_EXPEDITED, the library provides it
	 * with whatever heavy mechanism it found (each of them orders at
	 * least every thread of the process), and makes its registration a
	 * no-op.  With no process-wide barrier at all it cannot: a caller of
	 * membarrier() pairs it with a compiler barrier, not a fence.  With
	 * the probe skipped the kernel's mask is not known: the forced
	 * mechanism serves PRIVATE_EXPEDITED, the kernel the rest.
	 */
	if (heavy != MEMBARRIER_MECHANISM_FENCE &&
	    (skipped || !(kmask & MEMBARRIER_CMD_PRIVATE_EXPEDITED)))
		st.lib |= LMB_L_PRIVATE;
	return st;
}

/*
 * The fast path's words, from the published state: every thread that
 * gets here stores the same values, so plain stores do.  A caller that
 * still reads 0 takes the slow path, which gives the same answers.
 */
static void lmb_publish_fast(lmb_state_t st)
{
	uint32_t kmask = (uint32_t)lmb_st_kmask(st);

	if ((st.lib & (LMB_L_VALID | LMB_L_SKIPPED)) != LMB_L_VALID ||
	    (st.kern & (LMB_K_VALID | LMB_K_FAILED | LMB_K_UNASKED)) != LMB_K_VALID)
		return;
	lmb_query_answer_store(LMB_Q_VALID | kmask | (uint32_t)lmb_lib_emulated(st.lib));
	__atomic_store_n(&lmb_fast_word, kmask, __ATOMIC_RELAXED);
}

lmb_state_t lmb_state(void)
{
	lmb_state_t st;

	st.lib = __atomic_load_n(&lmb_lib_word, __ATOMIC_ACQUIRE);
	if (__builtin_expect(st.lib != 0, 1)) {
		st.kern = __atomic_load_n(&lmb_kern_word, __ATOMIC_RELAXED);
		/* The publisher was another thread, gone in a fork() child. */
		if (!__atomic_load_n(&libmembarrier_query_answer, __ATOMIC_RELAXED))
			lmb_publish_fast(st);
		return st;
	}

	/*
	 * First use, or a race between first users: each computes the same
	 * answer (QUERY is pure, registration idempotent, the signal is
	 * chosen once in sig-choose.c) and the first compare-and-swap of each
	 * word publishes it.  No lock, so this is safe from a signal handler
	 * and after fork.  The library word is derived from the kernel word
	 * the winner saw, and published after it.
	 */
	st = lmb_probe();
	st.lib = lmb_publish_word(&lmb_lib_word, 0, st.lib);
	st.kern = __atomic_load_n(&lmb_kern_word, __ATOMIC_RELAXED);
	lmb_publish_fast(st);

	/*
	 * The light side drops its fence only now that heavy has a real
	 * process-wide barrier, and never takes it back: a light barrier
	 * that is a fence pairs correctly with any heavy barrier.
	 */
	if (lmb_st_heavy(st) != MEMBARRIER_MECHANISM_FENCE)
		lmb_light_flag_store(0);
	return st;
}

int lmb_emulated_commands(lmb_state_t st)
{
	return lmb_lib_emulated(st.lib);
}

LMB_EXPORT int membarrier_get_strategy(struct membarrier_strategy *strategy,
				       size_t size)
{
	struct membarrier_strategy s;
	lmb_state_t st;

	if (strategy == NULL) {
		errno = EINVAL;
		return -1;
	}
	st = lmb_state();
	memset(&s, 0, sizeof(s));
	s.heavy = lmb_st_heavy(st);
	s.light_is_fence = s.heavy == MEMBARRIER_MECHANISM_FENCE;
	s.kernel_commands = lmb_st_kmask(st);
	s.kernel_errno = lmb_st_kerrno(st);
	s.emulated_commands = lmb_emulated_commands(st);
	s.library_registrations = lmb_mech_registration(s.heavy);
	s.probe_skipped = (st.lib & LMB_L_SKIPPED) != 0;
	s.environment_invalid = (st.lib & LMB_L_ENV_INVALID) != 0;
	/* The signal in use now: it can change (membarrier(3)). */
	s.signal = s.heavy == MEMBARRIER_MECHANISM_SIGNAL ? lmb_mech_signal() : 0;
	/* A newer caller's larger struct: its tail is zero, not garbage. */
	memset(strategy, 0, size);
	memcpy(strategy, &s, size < sizeof(s) ? size : sizeof(s));
	return 0;
}
