/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The listing of /proc/self/task: the threads a barrier must reach, read
 * so that a thread alive throughout cannot be missing from it, and the
 * checks that this /proc is our PID namespace's.  Calls only sys.c.
 */
#include "sig.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

struct lmb_own lmb_owns[LMB_SLOTS];

static long lmb_open_task_dir(void)
{
	return lmb_syscall(SYS_openat, AT_FDCWD, (long)"/proc/self/task",
			   O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
}

/* The thread id in a directory entry's name, or 0 ("." and ".."). */
pid_t lmb_entry_tid(const struct lmb_dirent64 *d)
{
	const char *p;
	pid_t tid = 0;

	for (p = d->d_name; *p >= '0' && *p <= '9'; p++)
		tid = tid * 10 + (*p - '0');
	return *p == '\0' ? tid : 0;
}

/*
 * getdents64() stops early, as if at the end, once a signal is pending
 * for the caller (a concurrent barrier's, typically): list with every
 * signal blocked, which clears the pending state.  Raw calls: the C
 * library's would leave its own internal signals unblocked.  (SIGKILL,
 * a group stop, a freezer or io_uring's task work still cut a listing
 * short: lmb_list() checks.)
 */
static long lmb_getdents2(long fd, char *buf, size_t size, long *more)
{
	sigset_t all, old;
	long n;

	/* Every bit: sigfillset() leaves out the C library's own signals. */
	memset(&all, 0xff, sizeof(all));
	(void)lmb_syscall(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)&old, _NSIG / 8);
	n = lmb_syscall(SYS_getdents64, fd, (long)buf, (long)size, 0);
	/* more: a second call from where the first stopped (lmb_list()). */
	if (more != NULL)
		*more = n < 0 || size - (size_t)n < LMB_MAX_RECLEN ? 0 :
			lmb_syscall(SYS_getdents64, fd, (long)(buf + n), (long)(size - (size_t)n), 0);
	(void)lmb_syscall(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, _NSIG / 8);
	return n;
}

static long lmb_getdents(long fd, char *buf, size_t size)
{
	return lmb_getdents2(fd, buf, size, NULL);
}

/*
 * Is the caller's own thread in /proc/self/task?  Not when /proc is from
 * another PID namespace.  (Completeness does not matter here.)
 */
int lmb_proc_lists_self(void)
{
	char buf[1024] __attribute__((aligned(8)));
	pid_t self = lmb_gettid();
	long fd = lmb_open_task_dir(), n;
	int found = 0;

	if (fd < 0)
		return 0;
	while (!found && (n = lmb_getdents(fd, buf, sizeof(buf))) > 0)
		for (long off = 0; off < n;) {
			struct lmb_dirent64 *d = (struct lmb_dirent64 *)(buf + off);

			off += d->d_reclen;
			if (lmb_entry_tid(d) == self)
				found = 1;
		}
	(void)lmb_syscall(SYS_close, fd, 0, 0, 0);
	return found;
}

/*
 * Is /proc this PID namespace's?  The ids of a /proc bind-mounted from
 * another namespace can match ours by chance; NSpid names the process in
 * every namespace from the /proc's down to ours, so a single field, our
 * pid, means the same namespace.  The whole of status is read, line by
 * line: NSpid follows Groups, which grows with the supplementary groups
 * (up to 65536 of them, 700 KB); a line longer than the buffer is
 * skipped.
 */
int lmb_proc_is_ours(void)
{
	char buf[512];
	long fd = lmb_syscall(SYS_openat, AT_FDCWD, (long)"/proc/self/status",
			      O_RDONLY | O_CLOEXEC, 0);
	size_t have = 0;
	int skipping = 0, ours = -1;

	if (fd < 0)
		return 0;
	while (ours < 0) {
		long n = lmb_syscall(SYS_read, fd, (long)(buf + have), (long)(sizeof(buf) - have), 0);
		char *line = buf, *nl;

		if (n < 0)
			ours = 0;
		if (n == 0)
			ours = 1;	/* before 4.1: no namespaces to tell apart */
		if (n <= 0)
			break;
		have += (size_t)n;
		while (ours < 0 && (nl = memchr(line, '\n', have - (size_t)(line - buf))) != NULL) {
			if (!skipping && strncmp(line, "NSpid:\t", 7) == 0) {
				const char *p = line + 7;
				long id = 0;

				while (*p >= '0' && *p <= '9')
					id = id * 10 + (*p++ - '0');
				ours = p == nl && p > line + 7 && id == getpid();
			}
			skipping = 0;
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof(buf)) {
			have = 0;	/* an overlong line: drop it */
			skipping = 1;
		}
	}
	(void)lmb_syscall(SYS_close, fd, 0, 0, 0);
	return ours;
}

/*
 * The slot's descriptor of /proc/self/task, opened once and kept: a
 * process at its descriptor limit, or one that unmounts /proc later, still
 * gets its barrier.  It is replaced when it belongs to the parent of a
 * fork(), or when the application closed it (and perhaps reused the
 * number: then it is not ours to close).  Returns it or -errno.
 */
long lmb_task_fd(struct lmb_own *own)
{
	pid_t pid = getpid();
	struct stat st;
	long fd;

	if (own->fd > 0) {
		int same = fstat(own->fd - 1, &st) == 0 && st.st_dev == own->dev &&
			   st.st_ino == own->ino;

		if (same && own->pid == pid)
			return own->fd - 1;
		if (same)
			(void)lmb_syscall(SYS_close, own->fd - 1, 0, 0, 0);
		own->fd = 0;
	}
	fd = lmb_open_task_dir();
	if (fd < 0)
		return fd;
	if (fstat((int)fd, &st) != 0) {
		long err = -errno;

		(void)lmb_syscall(SYS_close, fd, 0, 0, 0);
		return err;
	}
	own->fd = (int)fd + 1;
	own->pid = pid;
	own->dev = st.st_dev;
	own->ino = st.st_ino;
	return fd;
}

/*
 * The whole thread list in one getdents64() call: returns its length in
 * bytes at *list, or -errno.  The call fills the buffer while entries fit
 * (and no signal is pending, see lmb_getdents()), so a call that left
 * less room than the longest entry (a 10-digit name) may have been cut
 * short by the buffer: a larger one is mapped, up to 64 MiB (two million
 * threads).  A second call, from where the first stopped, must then find
 * nothing: entries there mean the walk stopped early (a signal-like
 * event, or a thread that exited under it, fs/proc/base.c) or threads
 * created since, and the whole list is read again.  Whether the walk
 * stopped at its last entry because that thread exited is the caller's
 * check.
 */
#define LMB_MAX_LIST (64UL << 20)
static long lmb_list(struct lmb_own *own, long fd, char **list)
{
	char *buf = own->buf ? own->buf : own->stack;
	size_t size = own->buf ? own->size : sizeof(own->stack);

	for (unsigned int attempt = 0;; attempt++) {
		long n, more;

		if (lmb_syscall(SYS_lseek, fd, 0, SEEK_SET, 0) < 0)
			return -EIO;
		n = lmb_getdents2(fd, buf, size, &more);
		if (n < 0)
			return n;
		if (size - (size_t)n >= LMB_MAX_RECLEN) {
			if (more == 0) {
				*list = buf;
				return n;
			}
			if (more > 0 || more == -EINVAL) {
				lmb_pause(attempt);	/* stopped early: again */
				continue;
			}
			return more;
		}
		/* Too small: 64 KiB (about 2000 threads), then doubling. */
		size = own->buf ? own->size * 2 : 65536;
		if (size > LMB_MAX_LIST)
			return -ENOMEM;
		if (own->buf)
			(void)munmap(own->buf, own->size);
		own->buf = NULL;
		buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (buf == MAP_FAILED)
			return -ENOMEM;
		own->buf = buf;
		own->size = size;
	}
}

/*
 * The thread list for a barrier, from the slot's descriptor fd: its length
 * in bytes at *list, -ESRCH when the caller's own thread self is not in it
 * (a /proc of another PID namespace), or another -errno.  The walk may
 * have stopped early at its last entry if that thread exited under it:
 * then the list is read again.
 */
long lmb_list_threads(struct lmb_own *own, long fd, pid_t pid, pid_t self, char **list)
{
	for (unsigned int attempt = 0;; attempt++) {
		pid_t last = 0;
		int found = 0;
		long n = lmb_list(own, fd, list);

		if (n < 0)
			return n;
		for (long off = 0; off < n;) {
			struct lmb_dirent64 *d = (struct lmb_dirent64 *)(*list + off);
			pid_t tid = lmb_entry_tid(d);

			off += d->d_reclen;
			if (tid > 0)
				last = tid;
			if (tid == self)
				found = 1;
		}
		if (last != self && last > 0 &&
		    lmb_syscall(SYS_tgkill, pid, last, 0, 0) == -ESRCH) {
			lmb_pause(attempt);
			continue;
		}
		return found ? n : -ESRCH;
	}
}
