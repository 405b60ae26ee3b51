/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The mechanisms of membarrier_heavy(), one entry each: its name, whether
 * it can serve here (and its set-up), and its barrier.  state.c chooses
 * among them and the public entry points use the one chosen, only through
 * this table.  Calls kernel.c and the signal mechanism's top (sig-round.c,
 * sig-choose.c, sig-slot.c).
 */
#include "internal.h"

#include <stddef.h>

/*
 * A kernel command that fails at run time (a seccomp filter installed
 * after start-up, ENOMEM, a process restored onto another kernel) is
 * replaced by the signal mechanism for that call: by then
 * membarrier_light() may have dropped its fence, so the heavy barrier
 * cannot fail (heavy.c).  lmb_mech_fallbacks counts those replacements:
 * the signal mechanism covers the caller's thread group only, which is
 * not everyone a kernel command covers in a child sharing our memory.
 */
uint32_t lmb_mech_fallbacks;

static int lmb_kernel_barrier(int cmd)
{
	if (lmb_kernel_call(cmd, 0, 0) == 0)
		return 0;
	/* Counted: a shared call's runner must know (coalesce.c). */
	__atomic_fetch_add(&lmb_mech_fallbacks, 1, __ATOMIC_RELAXED);
	return lmb_signal_heavy(0);
}

/*
 * On riscv64 the expedited commands were no process-wide barrier until
 * "membarrier: riscv: Add full memory barrier in switch_mm()" (mainline
 * 6.9, stable 6.6.51; not in 6.1.y, which Debian 12 runs): a thread
 * switched in on a CPU after the kernel read that CPU's current mm could
 * run user code with accesses not yet ordered after our barrier.  Without
 * it the next mechanism serves (GLOBAL: a grace period orders every
 * thread through its context switches).  A release string cannot show a
 * distribution's backport: such a kernel merely gets the slower barrier.
 * The other architectures' switch_mm() always had the barrier.
 */
static int lmb_mech_expedited_orders(void)
{
#if defined(__riscv)
	return lmb_kernel_at_least(6, 9) ||
	       (lmb_kernel_at_least3(6, 6, 51) && !lmb_kernel_at_least(6, 7));
#else
	return 1;
#endif
}

static int lmb_private_setup(int kmask, int sig)
{
	(void)sig;
	if (!lmb_mech_expedited_orders())
		return 0;
	/*
	 * Registration happens here, in the constructor, while the process
	 * is normally still single-threaded: the kernel then registers with
	 * a plain barrier, whereas registering a multi-threaded process
	 * waits for an RCU grace period.
	 */
	return (kmask & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	       (kmask & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) &&
	       lmb_sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

static int lmb_private_barrier(void)
{
	return lmb_kernel_barrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

static int lmb_shared_setup(int kmask, int sig)
{
	(void)sig;
	return lmb_mech_expedited_orders() && (kmask & MEMBARRIER_CMD_SHARED_EXPEDITED) &&
	       lmb_series_signature();
}

static int lmb_shared_barrier(void)
{
	return lmb_kernel_barrier(MEMBARRIER_CMD_SHARED_EXPEDITED);
}

static int lmb_global_setup(int kmask, int sig)
{
	(void)sig;
	return (kmask & MEMBARRIER_CMD_GLOBAL) != 0;
}

static int lmb_global_barrier(void)
{
	return lmb_kernel_barrier(MEMBARRIER_CMD_GLOBAL);
}

static int lmb_signal_mech_setup(int kmask, int sig)
{
	(void)kmask;
	return lmb_signal_setup(sig) > 0;
}

static int lmb_signal_mech_barrier(void)
{
	return lmb_signal_heavy(0);
}

static int lmb_fence_setup(int kmask, int sig)
{
	(void)kmask;
	(void)sig;
	return 1;
}

/* FENCE: membarrier_light() is a fence too. */
static int lmb_fence_barrier(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return 0;
}

/*
 * shared: concurrent callers share one call (coalesce.c).  The expedited
 * commands are serialised in the kernel (membarrier_ipi_mutex) and the
 * signal mechanism interrupts every thread per call, so they gain.  The
 * kernel already shares GLOBAL's grace periods among concurrent callers:
 * sharing them again in user space only adds a wake-up to each caller's
 * wait (make bench measures both).  A fence has nothing to share.
 */
static const struct lmb_mechanism {
	const char *name;
	int kernel;		/* 1: it calls membarrier(2) */
	int shared;		/* 1: concurrent callers share a call */
	int command;		/* the membarrier(2) command of its barrier, or 0 */
	int registration;	/* the REGISTER command its setup issues, or 0 */
	int (*setup)(int kmask, int sig);
	int (*barrier)(void);
} lmb_mechanisms[] = {
	[MEMBARRIER_MECHANISM_PRIVATE_EXPEDITED] = {
		"private-expedited", 1, 1, MEMBARRIER_CMD_PRIVATE_EXPEDITED,
		MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
		lmb_private_setup, lmb_private_barrier },
	[MEMBARRIER_MECHANISM_SHARED_EXPEDITED] = {
		"shared-expedited", 1, 1, MEMBARRIER_CMD_SHARED_EXPEDITED, 0,
		lmb_shared_setup, lmb_shared_barrier },
	[MEMBARRIER_MECHANISM_GLOBAL] = {
		"global", 1, 0, MEMBARRIER_CMD_GLOBAL, 0,
		lmb_global_setup, lmb_global_barrier },
	[MEMBARRIER_MECHANISM_SIGNAL] = {
		"signal", 0, 1, 0, 0, lmb_signal_mech_setup, lmb_signal_mech_barrier },
	[MEMBARRIER_MECHANISM_FENCE] = {
		"fence", 0, 0, 0, 0, lmb_fence_setup, lmb_fence_barrier },
};

#define LMB_NMECH ((int)(sizeof(lmb_mechanisms) / sizeof(lmb_mechanisms[0])))

static const struct lmb_mechanism *lmb_mech(int mechanism)
{
	if (mechanism <= 0 || mechanism >= LMB_NMECH)
		return NULL;
	return &lmb_mechanisms[mechanism];
}

LMB_EXPORT const char *membarrier_mechanism_name(int mechanism)
{
	const struct lmb_mechanism *m = lmb_mech(mechanism);

	return m ? m->name : NULL;
}

int lmb_mech_count(void)
{
	return LMB_NMECH - 1;
}

/*
 * Can the mechanism serve here?  kmask: the kernel's QUERY mask; skipped:
 * the library may not call membarrier(2) (LIBMEMBARRIER_HEAVY); sig: the
 * signal asked for (LIBMEMBARRIER_SIGNAL), or 0.
 */
int lmb_mech_setup(int mechanism, int kmask, int skipped, int sig)
{
	const struct lmb_mechanism *m = lmb_mech(mechanism);

	return m && !(skipped && m->kernel) && m->setup(kmask, sig);
}

/* The mechanism's barrier: returns 0, or does not return (heavy.c). */
int lmb_mech_barrier(int mechanism)
{
	const struct lmb_mechanism *m = lmb_mech(mechanism);

	return m ? m->barrier() : lmb_fence_barrier();
}

int lmb_mech_shared(int mechanism)
{
	const struct lmb_mechanism *m = lmb_mech(mechanism);

	return m ? m->shared : 0;
}

/* The membarrier(2) command of a kernel mechanism's barrier, or 0. */
int lmb_mech_command(int mechanism)
{
	const struct lmb_mechanism *m = lmb_mech(mechanism);

	return m ? m->command : 0;
}

int lmb_mech_registration(int mechanism)
{
	const struct lmb_mechanism *m = lmb_mech(mechanism);

	return m ? m->registration : 0;
}

/* The emulated PRIVATE_EXPEDITED_SYNC_CORE: the signal mechanism only. */
int lmb_mech_can_sync_core(void)
{
	return lmb_signal_can_sync_core();
}

int lmb_mech_sync_core(void)
{
	return lmb_signal_heavy(1);
}

/*
 * A command the kernel advertised fails with EPERM (after the
 * registration retry) or ENOSYS: a seccomp filter installed after
 * start-up, or a process restored onto a kernel without its
 * registration.  The commands the library emulates where the kernel lacks
 * them are emulated now too, with the signal mechanism, as they would have
 * been had the first call found the kernel so: a caller may already pair
 * them with compiler barriers.  Returns their result, or ret unchanged
 * (the signal mechanism cannot work here either, or cmd is another).
 */
int lmb_mech_emulate(int cmd, int ret)
{
	int sync = cmd == MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE ||
		   cmd == MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE;

	if (cmd != MEMBARRIER_CMD_PRIVATE_EXPEDITED &&
	    cmd != MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED && !sync)
		return ret;
	if ((sync && !lmb_signal_can_sync_core()) ||
	    (lmb_signal_current() <= 0 && lmb_signal_setup(0) <= 0))
		return ret;
	switch (cmd) {
	case MEMBARRIER_CMD_PRIVATE_EXPEDITED:
		return lmb_signal_heavy(0);
	case MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE:
		return lmb_signal_heavy(1);
	default:
		return 0;	/* a registration: nothing to do */
	}
}

/* The signal the signal mechanism uses now (it can change), or 0. */
int lmb_mech_signal(void)
{
	return lmb_signal_current();
}

/* Start-up work that is not async-signal-safe (the constructor). */
void lmb_mech_prepare(void)
{
	lmb_signal_prepare();
}
