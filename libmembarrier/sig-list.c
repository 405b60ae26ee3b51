/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The listing of /proc/self/task: the threads a barrier must reach, read
 * with the proof that no thread of the process is missing from it (sig.h,
 * "The thread list"), and the checks that this /proc is our PID
 * namespace's.  Calls only sys.c.
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
 * Every signal blocked, or the old mask back: getdents64() stops early,
 * as if at the end, once a signal is pending for the caller (a concurrent
 * barrier's, typically), and blocking every signal clears the pending
 * state.  Raw calls: the C library's would leave its own internal signals
 * unblocked.
 */
static void lmb_block_all(sigset_t *old)
{
	sigset_t all;

	/* Every bit: sigfillset() leaves out the C library's own signals. */
	memset(&all, 0xff, sizeof(all));
	(void)lmb_syscall(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)old, _NSIG / 8);
}

static void lmb_unblock(const sigset_t *old)
{
	(void)lmb_syscall(SYS_rt_sigprocmask, SIG_SETMASK, (long)old, 0, _NSIG / 8);
}

/* One getdents64() call from the start of the directory. */
static long lmb_getdents(long fd, char *buf, size_t size)
{
	long n = lmb_syscall(SYS_lseek, fd, 0, SEEK_SET, 0);

	return n < 0 ? n : lmb_syscall(SYS_getdents64, fd, (long)buf, (long)size, 0);
}

/*
 * Take and release the thread group's siglock, under which the kernel
 * adds a thread to the group and counts it, and uncounts it and removes
 * it (copy_process(), __exit_signal()): whatever such a change our reads
 * before this call saw in part, our reads after it see in full.
 * rt_sigpending() takes the lock unconditionally (do_sigpending()).
 */
static void lmb_siglock_sync(void)
{
	sigset_t set;

	(void)lmb_syscall(SYS_rt_sigpending, (long)&set, _NSIG / 8, 0, 0);
}

/*
 * Is the list (n bytes at list, one getdents64() call, in a buffer of
 * size bytes) complete?  The argument is in sig.h: the threads listed
 * again after the count, in a second walk, must be as many as it counts.
 * Both walks follow the group's own order (a new thread joins at the end,
 * one that leaves keeps the others' order), so each entry of the second
 * is looked for in the list only after the last one found: an entry
 * matches at most once, and whatever matches is in both.  The second walk
 * goes to the rest of the buffer, or to the stack when little is left.
 * Returns 1 if so, 0 if it must be read again, -ESRCH when the caller's
 * thread self is not in it, -errno when the count cannot be had.
 */
static int lmb_complete(long fd, pid_t self, char *list, long n, size_t size)
{
	char stack[512] __attribute__((aligned(8)));
	size_t rest = (size - (size_t)n) & ~(size_t)7;
	char *again = rest >= sizeof(stack) ? list + size - rest : stack;
	size_t again_size = rest >= sizeof(stack) ? rest : sizeof(stack);
	unsigned long both = 0;
	long at = 0, got;
	struct stat st;
	int saved = errno, found = 0;

	for (long off = 0; off < n && !found;) {
		const struct lmb_dirent64 *d = (const struct lmb_dirent64 *)(list + off);

		off += d->d_reclen;
		found = lmb_entry_tid(d) == self;
	}
	if (!found)
		return -ESRCH;
	lmb_siglock_sync();
	if (fstat((int)fd, &st) != 0) {
		int err = -errno;

		errno = saved;
		return err;
	}
	/* The kernel's count: 2 + get_nr_threads() (proc_task_getattr()). */
	if (st.st_nlink < 3)
		return -EIO;
	lmb_siglock_sync();
	for (got = lmb_getdents(fd, again, again_size); got > 0;
	     got = lmb_syscall(SYS_getdents64, fd, (long)again, (long)again_size, 0))
		for (long i = 0; i < got;) {
			const struct lmb_dirent64 *e = (const struct lmb_dirent64 *)(again + i);
			pid_t tid = lmb_entry_tid(e);

			i += e->d_reclen;
			for (long off = at; tid > 0 && off < n;) {
				const struct lmb_dirent64 *d =
					(const struct lmb_dirent64 *)(list + off);

				off += d->d_reclen;
				if (lmb_entry_tid(d) == tid) {
					both++;
					at = off;
					break;
				}
			}
		}
	if (got < 0)
		return (int)got;
	return both >= (unsigned long)st.st_nlink - 2;
}

/*
 * The list in one getdents64() call into the buffer at *map (*map_size
 * bytes) or, while there is none, stack (stack_size bytes), complete
 * (lmb_complete()): its length in bytes at *list, or -errno.  A call that
 * left less room than the longest entry (a 10-digit name) may have been
 * cut short by the buffer: if the count falls short, a larger one is
 * mapped, up to 64 MiB (two million threads).  Otherwise a list that
 * falls short is read again, up to tries times (0: for as long as it
 * takes, -EAGAIN after that), and one that lacks the caller's thread up
 * to LMB_SELF_TRIES times: it is not there when /proc belongs to another
 * PID namespace, where the ids name other threads (-ESRCH).
 */
#define LMB_MAX_LIST (64UL << 20)
#define LMB_SELF_TRIES 64
static long lmb_list(long fd, pid_t self, char *stack, size_t stack_size,
		     char **map, size_t *map_size, unsigned int tries, char **list)
{
	char *buf = *map ? *map : stack;
	size_t size = *map ? *map_size : stack_size;

	for (unsigned int attempt = 0, absent = 0;;) {
		sigset_t old;
		long n;
		int ret;

		lmb_block_all(&old);
		n = lmb_getdents(fd, buf, size);
		ret = n < 0 ? 0 : lmb_complete(fd, self, buf, n, size);
		lmb_unblock(&old);
		if (n < 0)
			return n;
		if (ret > 0) {
			*list = buf;
			return n;
		}
		if (ret < 0 && ret != -ESRCH)
			return ret;
		if (size - (size_t)n < LMB_MAX_RECLEN) {
			/* Too small: 64 KiB (about 2000 threads), then doubling. */
			size = *map ? *map_size * 2 : 65536;
			if (size > LMB_MAX_LIST)
				return -ENOMEM;
			if (*map)
				(void)munmap(*map, *map_size);
			*map = NULL;
			buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (buf == MAP_FAILED)
				return -ENOMEM;
			*map = buf;
			*map_size = size;
			continue;
		}
		if (ret == -ESRCH && ++absent >= LMB_SELF_TRIES)
			return ret;
		if (++attempt == tries)
			return -EAGAIN;
		lmb_pause(attempt);	/* stopped early, or threads came and went */
	}
}

/*
 * Can the mechanism list this process's threads here?  The caller's own
 * thread must be in /proc/self/task (not when /proc is from another PID
 * namespace), and the directory's link count must count the threads as
 * Linux's does (lmb_complete() relies on it): once, with no thread
 * started or ended in between, the threads listed must be exactly those
 * it counts.
 */
#define LMB_SETUP_TRIES 64
int lmb_proc_lists_self(void)
{
	char stack[1024] __attribute__((aligned(8)));
	pid_t self = lmb_gettid();
	long fd = lmb_open_task_dir();
	size_t map_size = 0;
	char *map = NULL;
	int saved = errno, exact = 0;

	if (fd < 0)
		return 0;
	for (unsigned int attempt = 0; !exact && attempt < LMB_SETUP_TRIES; attempt++) {
		unsigned long listed = 0;
		struct stat st;
		char *list;
		long n = lmb_list(fd, self, stack, sizeof(stack), &map, &map_size,
				  1024, &list);

		if (n < 0)
			break;
		for (long off = 0; off < n;) {
			const struct lmb_dirent64 *d = (const struct lmb_dirent64 *)(list + off);

			off += d->d_reclen;
			listed += lmb_entry_tid(d) > 0;
		}
		exact = fstat((int)fd, &st) == 0 && st.st_nlink == listed + 2;
		if (!exact)
			lmb_pause(attempt);
	}
	if (map)
		(void)munmap(map, map_size);
	(void)lmb_syscall(SYS_close, fd, 0, 0, 0);
	errno = saved;
	return exact;
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
/* lmb_read_lines(): 1 + whether the NSpid line names us by one id. */
static int lmb_nspid_line(char *line, void *arg)
{
	const char *p = line + 7;
	long id = 0;

	(void)arg;
	if (strncmp(line, "NSpid:\t", 7) != 0)
		return 0;
	while (*p >= '0' && *p <= '9')
		id = id * 10 + (*p++ - '0');
	return 1 + (*p == '\0' && p > line + 7 && id == getpid());
}

int lmb_proc_is_ours(void)
{
	char buf[512];
	long fd = lmb_syscall(SYS_openat, AT_FDCWD, (long)"/proc/self/status",
			      O_RDONLY | O_CLOEXEC, 0);
	int ret;

	if (fd < 0)
		return 0;
	ret = lmb_read_lines(fd, buf, sizeof(buf), lmb_nspid_line, NULL);
	(void)lmb_syscall(SYS_close, fd, 0, 0, 0);
	/* No NSpid line (before 4.1): no namespaces to tell apart. */
	return ret < 0 ? 0 : ret == 0 ? 1 : ret - 1;
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
 * The thread list for a barrier, from the slot's descriptor fd, complete:
 * its length in bytes at *list, -ESRCH when the caller's own thread self
 * is not in it (a /proc of another PID namespace), or another -errno.
 */
long lmb_list_threads(struct lmb_own *own, long fd, pid_t self, char **list)
{
	return lmb_list(fd, self, own->stack, sizeof(own->stack), &own->buf, &own->size,
			0, list);
}
