/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The probe's guard against a seccomp(2) filter that traps membarrier(2)
 * (SECCOMP_RET_TRAP, as Chromium-style argument filters do): the kernel
 * skips the call and forces a SIGSYS on the calling thread, which kills a
 * process whose SIGSYS has its default disposition.  An ignored or
 * blocked SIGSYS does not help: force_sig_info_to_task() resets the
 * disposition to SIG_DFL (for the whole process) and unblocks the signal
 * before it sends it.
 *
 * So while the library probes (state.c) a thread holds the guard: where
 * SIGSYS has its default disposition or is ignored, the guard installs a
 * handler for it and unblocks it in the probing thread, and puts both back
 * afterwards.  A trap of membarrier(2) in that thread only marks the
 * probe (lmb_sigsys_trapped()); the system call's result register holds
 * whatever the kernel's rollback left there (the system call number on
 * x86-64, the first argument on arm64), so the prober reads the mark, not
 * the result.  Any other SIGSYS gets what it would have had without the
 * guard: the default action, re-raised, or nothing where an ignored
 * SIGSYS was sent by kill().  An application's own handler is left alone:
 * it sees the trap, as it sees its own.
 *
 * One thread holds the guard at a time (the disposition is the
 * process's); a prober in another thread waits for it, but a signal
 * handler that probes in the holding thread (nested) does not: the
 * handler is in place then, and the trap is that thread's.  The holder
 * blocks every signal while it changes the disposition, so that nothing
 * nests in between.  A holder that is gone (a child of fork(), whose
 * parent was probing in another thread) is replaced.  Calls only sys.c.
 */
#include "internal.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#ifndef SYS_SECCOMP
# define SYS_SECCOMP 1		/* si_code of a seccomp trap (<asm/siginfo.h>) */
#endif

static pid_t lmb_holder;	/* the thread that holds the guard, or 0 */
static int lmb_trapped;		/* a probe's membarrier(2) trapped: for good */
static struct sigaction lmb_saved;	/* the disposition the guard replaced */
static int lmb_saved_ignored;	/* it was SIG_IGN */

static void lmb_sigsys_handler(int sig, siginfo_t *si, void *ctx)
{
	struct sigaction dfl;

	(void)ctx;
	if (si->si_code == SYS_SECCOMP &&
#ifdef si_syscall
	    si->si_syscall == SYS_membarrier &&
#endif
	    lmb_gettid() == __atomic_load_n(&lmb_holder, __ATOMIC_RELAXED)) {
		__atomic_store_n(&lmb_trapped, 1, __ATOMIC_RELAXED);
		return;
	}
	/* Not the probe's.  A SIGSYS that kill() sent (si_code <= 0)
	 * while the application ignores it: ignored. */
	if (si->si_code <= 0 && __atomic_load_n(&lmb_saved_ignored, __ATOMIC_RELAXED))
		return;
	/*
	 * A trap, or a SIGSYS sent where its action is the default one:
	 * that action, now.  The signal is blocked in this handler, so the
	 * one raised here is delivered as it returns, with SIG_DFL.
	 */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	(void)sigaction(sig, &dfl, NULL);
	if (lmb_syscall(SYS_tgkill, getpid(), lmb_gettid(), sig, 0) != 0)
		(void)lmb_syscall(SYS_kill, getpid(), sig, 0, 0);
}

static int lmb_is_ours(const struct sigaction *sa)
{
	return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == lmb_sigsys_handler;
}

static void lmb_mask(int how, const sigset_t *set, sigset_t *old)
{
	(void)lmb_syscall(SYS_rt_sigprocmask, how, (long)set, (long)old, _NSIG / 8);
}

/* Is a SIGSYS pending that unblocking it would deliver? */
static int lmb_sigsys_pending(void)
{
	sigset_t set;

	memset(&set, 0, sizeof(set));
	return lmb_syscall(SYS_rt_sigpending, (long)&set, _NSIG / 8, 0, 0) != 0 ||
	       sigismember(&set, SIGSYS);
}

/*
 * Take the guard, all signals blocked, as the holder: 1 if the handler is
 * in place then, 0 (the guard given back) where it is not to be.
 */
static int lmb_sigsys_install(const sigset_t *mask)
{
	struct sigaction cur, sa;

	if (sigaction(SIGSYS, NULL, &cur) != 0)
		return 0;
	/* Put there by a holder that is gone: what it saved still stands. */
	if (lmb_is_ours(&cur))
		return 1;
	/*
	 * The application's handler stays.  So does a blocked SIGSYS that
	 * is pending: unblocking it would deliver it, which the application
	 * did not ask for (unguarded, a trap kills as it always did).
	 */
	if ((cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN) ||
	    (sigismember(mask, SIGSYS) && lmb_sigsys_pending()))
		return 0;
	lmb_saved = cur;
	__atomic_store_n(&lmb_saved_ignored, cur.sa_handler == SIG_IGN, __ATOMIC_RELAXED);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = lmb_sigsys_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;	/* ONSTACK: as sig-choose.c */
	sigfillset(&sa.sa_mask);
	return sigaction(SIGSYS, &sa, NULL) == 0;
}

void lmb_sigsys_enter(struct lmb_sigsys_guard *g)
{
	pid_t me = lmb_gettid(), holder;
	sigset_t all;
	unsigned int round = 0;

	sigfillset(&all);
	lmb_mask(SIG_BLOCK, &all, &g->mask);
	g->held = LMB_GUARD_NONE;
	for (;;) {
		holder = 0;
		if (__atomic_compare_exchange_n(&lmb_holder, &holder, me, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			break;
		if (holder == me) {
			/* A signal handler, in the thread that probes. */
			g->held = LMB_GUARD_NESTED;
			break;
		}
		/* Gone: the parent's thread, in a child of fork(). */
		if (lmb_syscall(SYS_tgkill, getpid(), holder, 0, 0) == -ESRCH &&
		    __atomic_compare_exchange_n(&lmb_holder, &holder, me, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			break;
		lmb_mask(SIG_SETMASK, &g->mask, NULL);
		lmb_pause(round++);
		lmb_mask(SIG_BLOCK, &all, NULL);
	}
	if (g->held == LMB_GUARD_NONE) {
		if (lmb_sigsys_install(&g->mask))
			g->held = LMB_GUARD_HOLDER;
		else
			__atomic_store_n(&lmb_holder, 0, __ATOMIC_RELEASE);
	}
	if (g->held != LMB_GUARD_NONE) {
		/* Blocked, a trap would kill (see the top). */
		sigset_t probing = g->mask;

		sigdelset(&probing, SIGSYS);
		lmb_mask(SIG_SETMASK, &probing, NULL);
	} else {
		lmb_mask(SIG_SETMASK, &g->mask, NULL);
	}
}

void lmb_sigsys_leave(struct lmb_sigsys_guard *g)
{
	struct sigaction cur;
	sigset_t all;

	if (g->held == LMB_GUARD_HOLDER) {
		sigfillset(&all);
		lmb_mask(SIG_BLOCK, &all, NULL);
		/* Whoever changed it since (another thread) keeps theirs. */
		if (sigaction(SIGSYS, &lmb_saved, &cur) == 0 && !lmb_is_ours(&cur))
			(void)sigaction(SIGSYS, &cur, NULL);
		__atomic_store_n(&lmb_holder, 0, __ATOMIC_RELEASE);
	}
	if (g->held != LMB_GUARD_NONE)
		lmb_mask(SIG_SETMASK, &g->mask, NULL);
}

int lmb_sigsys_trapped(void)
{
	return __atomic_load_n(&lmb_trapped, __ATOMIC_RELAXED);
}
