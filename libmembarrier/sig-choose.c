/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Choosing the signal mechanism's signal: the one asked for, or a free
 * real-time signal that can be sent here; installing the handler; moving
 * to another signal when the application takes ours; and what a child of
 * fork() inherits.  Calls sig-slot.c, sig-thread.c, sig-list.c, sys.c.
 */
#include "sig.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

static int lmb_sig;		/* the signal in use; 0 until chosen */
static int lmb_atfork_done;

/*
 * The real-time signals that cannot be sent here, bit sig - SIGRTMIN (at
 * most 31 of them): qemu-user (7.2) takes a handler for the emulated
 * program's two highest but has no host signal to carry them (it keeps
 * two for itself), and sending them answers EINVAL; a sandbox may refuse
 * tgkill() (EPERM, ENOSYS) for every signal.  Found before a free signal
 * is taken (lmb_sendable()), or learnt from lmb_send(); never taken again.
 */
static unsigned int lmb_unsendable;

static int lmb_marked_unsendable(int sig)
{
	unsigned int bit = (unsigned int)(sig - SIGRTMIN);

	return bit < 32 && (__atomic_load_n(&lmb_unsendable, __ATOMIC_RELAXED) & (1u << bit));
}

void lmb_mark_unsendable(int sig)
{
	unsigned int bit = (unsigned int)(sig - SIGRTMIN);

	if (bit < 32)
		__atomic_fetch_or(&lmb_unsendable, 1u << bit, __ATOMIC_RELAXED);
}

int lmb_ours(int sig)
{
	struct sigaction sa;

	return sigaction(sig, NULL, &sa) == 0 && (sa.sa_flags & SA_SIGINFO) &&
	       sa.sa_sigaction == lmb_signal_handler;
}

static int lmb_free(int sig)
{
	struct sigaction sa;
	sigset_t mask;

	if (sigaction(sig, NULL, &sa) != 0 || pthread_sigmask(SIG_BLOCK, NULL, &mask) != 0)
		return 0;
	return !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL &&
	       !sigismember(&mask, sig);
}

/*
 * Send sig to thread tid of process pid: 0 or -errno.  The one call that
 * both the probe below and every barrier (sig-round.c) use, so that a
 * sandbox that refuses it is found at setup, where the library can still
 * choose another mechanism, rather than at a barrier, where it cannot.
 * tgkill() rather than rt_tgsigqueueinfo(): the C library's raise(),
 * abort() and pthread_kill() need it, so a sandbox allows it; the signal
 * carries no slot index (the handler finds its thread id, sig-slot.c).
 */
int lmb_send_signal(pid_t pid, pid_t tid, int sig)
{
	return (int)lmb_syscall(SYS_tgkill, pid, tid, sig, 0);
}

/*
 * Can the free signal sig be sent here?  It is sent to the calling thread
 * with sig blocked there (a free signal is not: lmb_free()), then taken
 * back with a sigtimedwait() that does not wait; no disposition changes,
 * as another thread may be installing one.  A thread-directed real-time
 * signal is dequeued before the process's, so exactly this one goes.
 * Only a full real-time queue (EAGAIN, RLIMIT_SIGPENDING) passes as a
 * failure that does not last; EINVAL (qemu-user) and a sandbox's refusal
 * (EPERM, ENOSYS) do: the signal is never taken again.
 */
static int lmb_sendable(int sig)
{
#if defined(SYS_rt_sigtimedwait) && !(defined(__x86_64__) && defined(__ILP32__))
	struct { long tv_sec, tv_nsec; } zero = { 0, 0 };
	long nr = SYS_rt_sigtimedwait;
#elif defined(SYS_rt_sigtimedwait)
	struct { long long tv_sec, tv_nsec; } zero = { 0, 0 };	/* x32 */
	long nr = SYS_rt_sigtimedwait;
#else
	struct { long long tv_sec, tv_nsec; } zero = { 0, 0 };
	long nr = SYS_rt_sigtimedwait_time64;
#endif
	sigset_t one, old;
	int ret;

	memset(&one, 0, sizeof(one));
	sigaddset(&one, sig);
	(void)lmb_syscall(SYS_rt_sigprocmask, SIG_BLOCK, (long)&one, (long)&old, _NSIG / 8);
	ret = lmb_send_signal(getpid(), lmb_gettid(), sig);
	if (ret == 0)
		(void)lmb_syscall(nr, (long)&one, 0, (long)&zero, _NSIG / 8);
	(void)lmb_syscall(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, _NSIG / 8);
	if (ret != 0 && ret != -EAGAIN) {
		lmb_mark_unsendable(sig);
		return 0;
	}
	return 1;
}

/* Install the handler on the signal asked for, or on the highest free
 * real-time signal other than `avoid` that can be sent.  Returns it, or
 * -1. */
int lmb_install(int requested, int avoid)
{
	struct sigaction sa;
	int sig = -1;

	for (int s = requested ? requested : SIGRTMAX;
	     s >= (requested ? requested : SIGRTMIN); s--) {
		if (s != avoid && !lmb_marked_unsendable(s) &&
		    (lmb_ours(s) || (lmb_free(s) && lmb_sendable(s)))) {
			sig = s;
			break;
		}
	}
	if (sig < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = lmb_signal_handler;
	/*
	 * SA_ONSTACK: on a thread with an alternate signal stack, the handler
	 * runs there, not on a stack that may have no room and no guard page
	 * (Go's goroutine stacks: Go requires it of every handler).
	 */
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigfillset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL) != 0)
		return -1;
	return sig;
}

/* A child of fork() has one thread: barriers other threads had under way
 * in the parent do not exist in it.  (The descriptors in lmb_owns[] are
 * the parent's directory: lmb_task_fd() replaces them.) */
static void lmb_atfork_child(void)
{
	lmb_slots_reset();
	lmb_blockers_reset();
}

/*
 * From the constructor: pthread_atfork() is not async-signal-safe, and the
 * signal mechanism may first be needed in a signal handler (a kernel
 * command refused at run time).
 */
void lmb_signal_prepare(void)
{
	if (!__atomic_exchange_n(&lmb_atfork_done, 1, __ATOMIC_ACQ_REL))
		(void)pthread_atfork(lmb_blockers_prepare, NULL, lmb_atfork_child);
}

/* Publish sig in place of old; a racing thread may have published first. */
int lmb_publish(int old, int sig)
{
	int cur = old;

	if (__atomic_compare_exchange_n(&lmb_sig, &cur, sig, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		/* The constructor did it, but the tests' copy has none. */
		lmb_signal_prepare();
		return sig;
	}
	/* Another thread chose first: give back the signal we took. */
	if (cur != sig) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		(void)sigaction(sig, &sa, NULL);
	}
	return cur;
}

/*
 * Choose the signal once per process: the one asked for
 * (LIBMEMBARRIER_SIGNAL), else the highest real-time signal that nobody
 * handles or blocks (applications tend to take them from SIGRTMIN up).
 * Returns it, or -1 where the mechanism cannot work.
 */
int lmb_signal_setup(int requested)
{
	int sig = __atomic_load_n(&lmb_sig, __ATOMIC_ACQUIRE);

	if (sig > 0)
		return sig;
	if (!lmb_proc_lists_self() || !lmb_proc_is_ours())
		return -1;
	lmb_thread_setup();
	sig = lmb_install(requested, 0);
	if (sig < 0)
		return -1;
	return lmb_publish(0, sig);
}

int lmb_signal_current(void)
{
	return __atomic_load_n(&lmb_sig, __ATOMIC_ACQUIRE);
}
