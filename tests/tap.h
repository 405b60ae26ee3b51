/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A minimal TAP producer for the tests (automake's tap-driver.sh reads it). */
#ifndef LMB_TESTS_TAP_H
#define LMB_TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_run, tap_failed;

static inline void tap_plan(int n)
{
	printf("1..%d\n", n);
	fflush(stdout);
}

__attribute__((format(printf, 2, 3)))
static inline int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	tap_run++;
	if (!cond)
		tap_failed++;
	/* No numbers: tests that re-execute themselves print in turn. */
	printf("%s - ", cond ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return cond;
}

__attribute__((format(printf, 1, 2)))
static inline void tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

__attribute__((format(printf, 1, 2), noreturn))
static inline void tap_bail(const char *fmt, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(99);
}

static inline int tap_exit(void)
{
	return tap_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
