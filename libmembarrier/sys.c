/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The bottom layer: raw system calls, the clock and the waits, for every
 * file above.  Calls nothing of the library's.  Each function leaves errno
 * as it found it, so the library's internal calls are async-signal-safe.
 */
#include "internal.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <linux/futex.h>

long lmb_syscall(long nr, long a, long b, long c, long d)
{
	int saved = errno;
	long ret = syscall(nr, a, b, c, d);

	if (ret == -1)
		ret = -errno;
	errno = saved;
	return ret;
}

pid_t lmb_gettid(void)
{
	return (pid_t)lmb_syscall(SYS_gettid, 0, 0, 0, 0);
}

/*
 * Waiting: a yield, then a raw clock_nanosleep(), never the C library's
 * nanosleep(), which is a cancellation point: a thread cancelled there
 * would leave its barrier half done and its slot taken for good (after
 * 64 of those every barrier waits forever for a slot).  The raw system
 * call is not one, as glibc's own "nocancel" waits are not.  (sched_yield()
 * is no cancellation point.)  ThreadSanitizer does not see the raw sleep,
 * but the waiting loops around it call clock_gettime() and sigaction(),
 * which it intercepts and where it delivers the signals it held back.
 * errno is preserved.
 */
void lmb_pause(unsigned int round)
{
#if defined(SYS_clock_nanosleep) && defined(__x86_64__) && defined(__ILP32__)
	struct { long long tv_sec, tv_nsec; } ts = { 0, 0 };	/* x32 */
	long nr = SYS_clock_nanosleep;
#elif defined(SYS_clock_nanosleep)
	struct { long tv_sec, tv_nsec; } ts = { 0, 0 };		/* the kernel's timespec */
	long nr = SYS_clock_nanosleep;
#else
	struct { long long tv_sec, tv_nsec; } ts = { 0, 0 };	/* 32-bit, time64 only */
	long nr = SYS_clock_nanosleep_time64;
#endif
	int saved = errno;

	if (round < 64) {
		(void)sched_yield();
	} else {
		/* A slow target (preempted, sleeping in the kernel): back off. */
		ts.tv_nsec = round < 1024 ? 20000 : 1000000;
		(void)lmb_syscall(nr, CLOCK_MONOTONIC, 0, (long)&ts, 0);
	}
	errno = saved;
}

/*
 * Sleep on a private futex while *addr holds val, for at most ns
 * nanoseconds (0: without a bound).  Returns when woken, when *addr no
 * longer held val, at the bound, or on a signal; the caller reads the
 * word again.  The raw system call, with the kernel's own timespec (see
 * lmb_pause()): no cancellation point, errno preserved.
 */
void lmb_futex_wait(uint32_t *addr, uint32_t val, int64_t ns)
{
#if defined(SYS_futex) && defined(__x86_64__) && defined(__ILP32__)
	struct { long long tv_sec, tv_nsec; } ts;		/* x32 */
	long nr = SYS_futex;
#elif defined(SYS_futex)
	struct { long tv_sec, tv_nsec; } ts;			/* the kernel's timespec */
	long nr = SYS_futex;
#else
	struct { long long tv_sec, tv_nsec; } ts;		/* 32-bit, time64 only */
	long nr = SYS_futex_time64;
#endif

	if (ns > 0) {
		ts.tv_sec = ns / 1000000000;
		ts.tv_nsec = ns % 1000000000;
	}
	(void)lmb_syscall(nr, (long)addr, FUTEX_WAIT_PRIVATE, (long)val, ns > 0 ? (long)&ts : 0);
}

/* CLOCK_MONOTONIC in nanoseconds: 64 bits on 32-bit architectures too. */
int64_t lmb_now_ns(void)
{
	struct timespec ts = { 0, 0 };	/* a refused clock reads 0, not garbage */

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * Is the running kernel's release major.minor.patch or later?  0 when
 * uname() fails or the release does not parse.  A distribution's release
 * ("6.1.0-28-amd64") says nothing of its stable patch level: callers ask
 * for a patch level only where a wrong "no" merely costs speed.
 */
int lmb_kernel_at_least3(long major, long minor, long patch)
{
	struct utsname u;
	const char *p;
	long v[3] = { 0, 0, 0 }, want[3] = { major, minor, patch };

	if (uname(&u) != 0)
		return 0;
	p = u.release;
	for (int i = 0; i < 3; i++) {
		while (*p >= '0' && *p <= '9')
			v[i] = v[i] * 10 + (*p++ - '0');
		if (*p++ != '.')
			break;
	}
	for (int i = 0; i < 3; i++)
		if (v[i] != want[i])
			return v[i] > want[i];
	return 1;
}

/* The same for major.minor. */
int lmb_kernel_at_least(long major, long minor)
{
	return lmb_kernel_at_least3(major, minor, 0);
}

/*
 * Read fd line by line through buf (size bytes), calling line() with each
 * line, NUL-terminated in place of its newline; a line longer than buf is
 * skipped.  Stops when line() returns nonzero, and returns that; at the
 * end of the file returns 0, after a failed read -errno.  System calls
 * and the caller's buffer only: async-signal-safe.
 */
int lmb_read_lines(long fd, char *buf, size_t size, int (*line)(char *text, void *arg),
		   void *arg)
{
	size_t have = 0;
	int skipping = 0;

	for (;;) {
		long n = lmb_syscall(SYS_read, fd, (long)(buf + have), (long)(size - have), 0);
		char *at = buf, *nl;

		if (n <= 0)
			return (int)n;
		have += (size_t)n;
		while ((nl = memchr(at, '\n', have - (size_t)(at - buf))) != NULL) {
			int ret = 0;

			*nl = '\0';
			if (!skipping)
				ret = line(at, arg);
			skipping = 0;
			if (ret != 0)
				return ret;
			at = nl + 1;
		}
		have -= (size_t)(at - buf);
		memmove(buf, at, have);
		if (have == size) {
			have = 0;	/* an overlong line: drop it */
			skipping = 1;
		}
	}
}
