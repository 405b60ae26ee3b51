/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fatal errors: the one way out where no correct barrier is left (see
 * membarrier(3)).  Calls only sys.c.
 */
#include "internal.h"

#include <stdlib.h>

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
