/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Descriptors held in reserve for the signal mechanism.  membarrier(3)
 * promises that no call fails for lack of a descriptor, but a barrier
 * opens some: a slot's /proc/self/task (kept), and /proc/self/task/TID/
 * files, one at a time, closed at once.  A process at RLIMIT_NOFILE would
 * abort in its first barrier, or read no thread's state.  So setup, while
 * descriptors are free, takes three and holds them: a barrier whose open()
 * fails with EMFILE or ENFILE frees one and opens again, and takes it
 * back afterwards (dup()) where it can.  One may go to a slot's
 * /proc/self/task for good; two stay for reading threads, one at a time.
 *
 * The three are the two ends of a pipe and a dup() of one: an inode nobody else has, so a number
 * the application closed and reused (closefrom() in a daemon) is told
 * from ours by fstat() before it is closed, and is then simply forgotten.
 * Calls only sys.c.
 */
#include "sig.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

#define LMB_RESERVE 3
static int lmb_res[LMB_RESERVE];	/* descriptor + 1; 0 if none */
static dev_t lmb_res_dev;
static ino_t lmb_res_ino;
static int lmb_res_busy;		/* one user at a time, see lmb_res_lock() */

/* Try to take the reserve: 1, or 0 when another thread (or this thread,
 * in a signal handler that interrupted it) has it. */
static int lmb_res_lock(void)
{
	return !__atomic_exchange_n(&lmb_res_busy, 1, __ATOMIC_ACQUIRE);
}

static void lmb_res_unlock(void)
{
	__atomic_store_n(&lmb_res_busy, 0, __ATOMIC_RELEASE);
}

/* Is fd (still) one of ours? */
static int lmb_res_ours(int fd)
{
	int saved = errno;
	struct stat st;
	int ours = fstat(fd, &st) == 0 && st.st_dev == lmb_res_dev && st.st_ino == lmb_res_ino;

	errno = saved;
	return ours;
}

/* Once, at setup (lmb_thread_setup()). */
void lmb_reserve_setup(void)
{
	int fds[2], saved = errno;
	struct stat st;

	if (!lmb_res_lock())
		return;
	if (lmb_res[0] == 0 && lmb_res[1] == 0 &&
	    lmb_syscall(SYS_pipe2, (long)fds, O_CLOEXEC, 0, 0) == 0) {
		if (fstat(fds[0], &st) == 0) {
			lmb_res_dev = st.st_dev;
			lmb_res_ino = st.st_ino;
			lmb_res[0] = fds[0] + 1;
			lmb_res[1] = fds[1] + 1;
		} else {
			(void)lmb_syscall(SYS_close, fds[0], 0, 0, 0);
			(void)lmb_syscall(SYS_close, fds[1], 0, 0, 0);
		}
	}
	errno = saved;
	lmb_reserve_give();	/* the third, and unlocks */
}

/*
 * Free a reserved descriptor, for an open() that failed with EMFILE or
 * ENFILE to try again, if more than keep are held: 1 if one was freed,
 * 0 if not (too few left, or the reserve is in use).  After 1, call
 * lmb_reserve_give(), which takes it back (dup()) if it can: the reserve
 * stays locked until then, so that another barrier's borrowing cannot use
 * up the one it is taken back from.  keep 1 for a descriptor closed again
 * at once; 2 for one kept (a slot's /proc/self/task), which leaves enough
 * for reading threads.
 */
int lmb_reserve_take(int keep)
{
	int held = 0;

	if (!lmb_res_lock())
		return 0;
	for (int i = 0; i < LMB_RESERVE; i++) {
		if (lmb_res[i] > 0 && lmb_res_ours(lmb_res[i] - 1))
			held++;
		else
			lmb_res[i] = 0;
	}
	for (int i = 0; i < LMB_RESERVE && held > keep; i++) {
		if (lmb_res[i] > 0) {
			(void)lmb_syscall(SYS_close, lmb_res[i] - 1, 0, 0, 0);
			lmb_res[i] = 0;
			return 1;
		}
	}
	lmb_res_unlock();
	return 0;
}

/* After lmb_reserve_take() returned 1: take back what it freed, if a
 * descriptor is free again, as a dup() of one still held. */
void lmb_reserve_give(void)
{
	int have = -1;

	for (int i = 0; i < LMB_RESERVE; i++)
		if (lmb_res[i] > 0)
			have = lmb_res[i] - 1;
	for (int i = 0; i < LMB_RESERVE && have >= 0; i++) {
		int saved = errno, fd;

		if (lmb_res[i] > 0)
			continue;
		fd = fcntl(have, F_DUPFD_CLOEXEC, 0);
		errno = saved;
		if (fd < 0)
			break;
		lmb_res[i] = fd + 1;
	}
	lmb_res_unlock();
}

/* A child of fork() has one thread: a lock another thread of the parent
 * held is not held in it.  (The descriptors are the child's too.) */
void lmb_reserve_reset(void)
{
	__atomic_store_n(&lmb_res_busy, 0, __ATOMIC_RELAXED);
}
