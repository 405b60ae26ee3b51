/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The signal mechanism: a process-wide barrier without membarrier(2), for
 * kernels without it (before 4.3, CONFIG_MEMBARRIER=n) and for sandboxes
 * that refuse it.  membarrier_heavy() sends a real-time signal to every
 * other thread of the process and waits until each has run the handler,
 * which executes a full fence; a thread that exits before handling it
 * needs no barrier (exit enters the kernel, and it runs no more user code).
 *
 * Why signals and not the mprotect()/madvise() TLB-shootdown trick used by
 * Folly, .NET and others: that trick relies on the kernel interrupting
 * every CPU that runs the process to invalidate TLBs.  arm64 invalidates
 * with broadcast instructions and sends no IPI, and x86 kernels that use
 * AMD's INVLPGB do the same, so the trick is silently no barrier at all on
 * exactly the new kernels a sandbox may run us on.  A signal handler runs
 * on the target thread on every architecture.
 *
 * Limits, all documented in membarrier(3):
 * - The signal interrupts the other threads: system calls that the kernel
 *   never restarts (poll, epoll_wait, nanosleep, ...; see signal(7)) fail
 *   with EINTR in them even though the handler is SA_RESTART.
 * - A thread that blocks the signal, or is stopped by a debugger, delays
 *   membarrier_heavy() until it unblocks it or resumes.
 * - The application must leave the signal alone; membarrier_heavy() fails
 *   with EBUSY if its handler was replaced.
 * - The thread list is read from /proc/self/task; without /proc the
 *   library falls back to fences instead (state.c).
 * - Unlike the kernel command, this orders only this process's threads;
 *   that is all PRIVATE_EXPEDITED and membarrier_heavy() promise.
 * Everything here is a raw system call on the stack or in static memory,
 * so membarrier_heavy() stays async-signal-safe in this mode.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LMB_SLOTS 64		/* concurrent membarrier_heavy() calls */
#define LMB_BATCH 64		/* threads signalled per round */

/*
 * A heavy barrier in progress owns a slot; the signal carries the slot's
 * index (never a pointer, so a stray signal cannot make the handler write
 * anywhere).  The handler marks its own thread id done.  A handler run for
 * any reason after the slot was filled is a real fence on that thread
 * after the heavy caller's first fence, so marking it done is always true.
 */
struct lmb_slot {
	int busy;
	int count;
	pid_t tid[LMB_BATCH];
	unsigned char done[LMB_BATCH];
};

static struct lmb_slot lmb_slots[LMB_SLOTS];
static int lmb_atfork_done;

struct lmb_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static pid_t lmb_gettid(void)
{
	return (pid_t)lmb_syscall(SYS_gettid, 0, 0, 0, 0);
}

static void lmb_signal_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (si->si_code == SI_QUEUE && si->si_value.sival_int >= 0 &&
	    si->si_value.sival_int < LMB_SLOTS) {
		struct lmb_slot *slot = &lmb_slots[si->si_value.sival_int];
		int count = __atomic_load_n(&slot->count, __ATOMIC_ACQUIRE);
		pid_t self = lmb_gettid();

		for (int i = 0; i < count && i < LMB_BATCH; i++)
			if (__atomic_load_n(&slot->tid[i], __ATOMIC_RELAXED) == self)
				__atomic_store_n(&slot->done[i], 1, __ATOMIC_RELEASE);
	}
}

/* A child of fork() has one thread: barriers other threads had under way
 * in the parent do not exist in it. */
static void lmb_atfork_child(void)
{
	memset(lmb_slots, 0, sizeof(lmb_slots));
}

static int lmb_ours(int sig)
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
 * Pick the signal: the one asked for (LIBMEMBARRIER_SIGNAL), else the
 * highest real-time signal that nobody handles or blocks (applications
 * tend to take them from SIGRTMIN up).  Returns it, or -1 where the
 * mechanism cannot work.
 */
int lmb_signal_setup(int requested)
{
	struct sigaction sa;
	int fd, sig = -1;

	fd = (int)lmb_syscall(SYS_openat, AT_FDCWD, (long)"/proc/self/task",
			      O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	(void)lmb_syscall(SYS_close, fd, 0, 0, 0);

	for (int s = requested ? requested : SIGRTMAX;
	     s >= (requested ? requested : SIGRTMIN); s--) {
		if (lmb_ours(s) || lmb_free(s)) {
			sig = s;
			break;
		}
	}
	if (sig < 0)
		return -1;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = lmb_signal_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL) != 0)
		return -1;
	if (!__atomic_exchange_n(&lmb_atfork_done, 1, __ATOMIC_ACQ_REL))
		(void)pthread_atfork(NULL, NULL, lmb_atfork_child);
	return sig;
}

/*
 * Waiting: the C library's sched_yield() and nanosleep() rather than raw
 * system calls, so that tools that interpose on them see a waiting thread
 * (ThreadSanitizer delivers pending signals only inside functions it
 * intercepts; with raw system calls two concurrent heavy barriers would
 * wait for each other's signals forever under it).  errno is preserved.
 */
static void lmb_pause(unsigned int round)
{
	struct timespec ts = { 0, 0 };
	int saved = errno;

	if (round < 64) {
		(void)sched_yield();
	} else {
		/* A slow target (preempted, sleeping in the kernel): back off. */
		ts.tv_nsec = round < 1024 ? 20000 : 1000000;
		(void)nanosleep(&ts, NULL);
	}
	errno = saved;
}

static struct lmb_slot *lmb_slot_get(int *index)
{
	for (;;) {
		for (int i = 0; i < LMB_SLOTS; i++) {
			if (!__atomic_exchange_n(&lmb_slots[i].busy, 1, __ATOMIC_ACQUIRE)) {
				*index = i;
				return &lmb_slots[i];
			}
		}
		lmb_pause(0);
	}
}

/* Signal the batch in the slot and wait for every live target. */
static int lmb_round(struct lmb_slot *slot, int index, int count, int sig,
		     pid_t pid, uid_t uid)
{
	siginfo_t info;
	int err = 0;

	__atomic_store_n(&slot->count, count, __ATOMIC_RELEASE);
	for (int i = 0; i < count; i++) {
		long ret;

		memset(&info, 0, sizeof(info));
		info.si_signo = sig;
		info.si_code = SI_QUEUE;
		info.si_pid = pid;
		info.si_uid = uid;
		info.si_value.sival_int = index;
		while ((ret = lmb_syscall(SYS_rt_tgsigqueueinfo, pid, slot->tid[i],
					  sig, (long)&info)) == -EAGAIN)
			lmb_pause(0);	/* real-time signal queue full */
		if (ret == -ESRCH) {
			__atomic_store_n(&slot->done[i], 1, __ATOMIC_RELAXED);
		} else if (ret < 0) {
			__atomic_store_n(&slot->done[i], 1, __ATOMIC_RELAXED);
			err = (int)-ret;
		}
	}

	for (unsigned int round = 0;; round++) {
		int pending = 0;

		for (int i = 0; i < count; i++) {
			if (__atomic_load_n(&slot->done[i], __ATOMIC_ACQUIRE))
				continue;
			/* An exited thread ran no handler, and needs none. */
			if (round > 0 && round % 16 == 0 &&
			    lmb_syscall(SYS_tgkill, pid, slot->tid[i], 0, 0) == -ESRCH) {
				__atomic_store_n(&slot->done[i], 1, __ATOMIC_RELAXED);
				continue;
			}
			pending++;
		}
		if (pending == 0)
			break;
		lmb_pause(round);
	}
	return err;
}

int lmb_signal_barrier(int sig)
{
	char buf[2048] __attribute__((aligned(8)));
	pid_t pid = getpid(), self = lmb_gettid();
	uid_t uid = getuid();
	struct lmb_slot *slot;
	int index, fd, count = 0, err = 0;
	long n = 0;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!lmb_ours(sig))
		return -EBUSY;
	fd = (int)lmb_syscall(SYS_openat, AT_FDCWD, (long)"/proc/self/task",
			      O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;

	slot = lmb_slot_get(&index);
	while (err == 0 &&
	       (n = lmb_syscall(SYS_getdents64, fd, (long)buf, sizeof(buf), 0)) > 0) {
		for (long off = 0; off < n;) {
			struct lmb_dirent64 *d = (struct lmb_dirent64 *)(buf + off);
			pid_t tid = 0;
			const char *p;

			off += d->d_reclen;
			for (p = d->d_name; *p >= '0' && *p <= '9'; p++)
				tid = tid * 10 + (*p - '0');
			if (*p != '\0' || tid <= 0 || tid == self)
				continue;
			__atomic_store_n(&slot->done[count], 0, __ATOMIC_RELAXED);
			__atomic_store_n(&slot->tid[count], tid, __ATOMIC_RELAXED);
			if (++count == LMB_BATCH) {
				err = lmb_round(slot, index, count, sig, pid, uid);
				count = 0;
			}
		}
	}
	if (n < 0 && err == 0)
		err = (int)-n;
	if (count > 0 && err == 0)
		err = lmb_round(slot, index, count, sig, pid, uid);

	__atomic_store_n(&slot->count, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->busy, 0, __ATOMIC_RELEASE);
	(void)lmb_syscall(SYS_close, fd, 0, 0, 0);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return err ? -err : 0;
}
