/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * membarrier_heavy(): the mechanism chosen at start-up (state.c), and what
 * happens when it fails later.  By then membarrier_light() may have
 * dropped its fence, and it never takes it back, so a failure returned to
 * the caller could not be survived: the light side would be left with a
 * compiler barrier and no heavy barrier to pair with.  So heavy() does not
 * fail.  A kernel command that fails at run time (a seccomp filter
 * installed after start-up, ENOMEM, a process restored onto another
 * kernel) is replaced by the signal mechanism for that call; the signal
 * mechanism moves to another signal if the application took its own
 * (signal.c); where no correct barrier is left, the process aborts with a
 * message (membarrier(3) lists the cases).
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/* Append the decimal v to buf at *len. */
static void lmb_put_long(char *buf, size_t size, size_t *len, long v)
{
	char digits[24];
	unsigned long u = v < 0 ? 0UL - (unsigned long)v : (unsigned long)v;
	int n = 0;

	do {
		digits[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u > 0);
	if (v < 0)
		digits[n++] = '-';
	while (n > 0 && *len < size)
		buf[(*len)++] = digits[--n];
}

/*
 * Write "libmembarrier: " and what (each "%ld" in it replaced by a, then
 * b), "; aborting", to standard error, and abort().  Async-signal-safe.
 */
void lmb_die(const char *what, long a, long b)
{
	static const char head[] = "libmembarrier: ", tail[] = "; aborting\n";
	char buf[512];
	size_t len = 0;
	long args[2] = { a, b };
	int used = 0;

	for (const char *p = head; *p && len < sizeof(buf); p++)
		buf[len++] = *p;
	for (const char *p = what; *p && len < sizeof(buf); p++) {
		if (p[0] == '%' && p[1] == 'l' && p[2] == 'd' && used < 2) {
			lmb_put_long(buf, sizeof(buf), &len, args[used++]);
			p += 2;
		} else {
			buf[len++] = *p;
		}
	}
	for (const char *p = tail; *p && len < sizeof(buf); p++)
		buf[len++] = *p;
	(void)lmb_syscall(SYS_write, 2, (long)buf, (long)len, 0);
	abort();
}

int lmb_heavy(lmb_state_t st)
{
	int cmd;

	switch (lmb_st_heavy(st)) {
	case MEMBARRIER_MECHANISM_PRIVATE_EXPEDITED:
		cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED;
		break;
	case MEMBARRIER_MECHANISM_SHARED_EXPEDITED:
		cmd = MEMBARRIER_CMD_SHARED_EXPEDITED;
		break;
	case MEMBARRIER_MECHANISM_GLOBAL:
		cmd = MEMBARRIER_CMD_GLOBAL;
		break;
	case MEMBARRIER_MECHANISM_SIGNAL:
		return lmb_signal_heavy(0);
	default:
		/* FENCE: membarrier_light() is a fence too. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		return 0;
	}

	if (lmb_kernel_call(cmd, 0, 0) == 0)
		return 0;
	/* The kernel refused what it gave at start-up: signals instead. */
	return lmb_signal_heavy(0);
}

LMB_EXPORT int membarrier_heavy(void)
{
	return lmb_heavy(lmb_state());
}

/* The out-of-line light barrier, for callers that cannot use the inline. */
#undef membarrier_light
LMB_EXPORT void membarrier_light(void)
{
	if (__atomic_load_n(&libmembarrier_light_fence, __ATOMIC_RELAXED))
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	else
		__asm__ __volatile__("" : : : "memory");
}
