/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The stack a heavy barrier needs, measured, against what membarrier(3)
 * says (its NOTES: "A call needs about X KiB of stack, also when it sets
 * the signal mechanism up", and "up to about Y KiB more for the dynamic
 * linker").  The calls run on a stack of their own
 * (makecontext(3)) filled with a pattern; the depth is how much of the
 * pattern is gone, less the depth of the same frame calling an empty
 * function.  With the signal mechanism (the tests' copy of the library
 * detects at the first call: LIBMEMBARRIER_HEAVY=signal before it):
 *   setup   the first call, which chooses the signal and probes /proc;
 *   call    the deepest of 200 later calls, with a thread running user
 *           code (its status is read: the deepest path) and one asleep.
 * Both are measured twice: binding lazily, where the first call that
 * reaches a C library function runs the dynamic linker's resolver on the
 * same stack (the page's "up to about Y KiB more"), then again with
 * LD_BIND_NOW=1 (the test re-executes itself), the library's own need
 * (the page's "about X KiB").  X must hold and be tight (X - 0.5 KiB <
 * measured <= X), X + Y must hold: a page that is wrong either way fails.
 * The page's figures are for x86_64 as built by configure's defaults
 * (-O2); elsewhere (another architecture, other CFLAGS, STACK_CHECK=no:
 * twice the page's figures; a sanitizer: four times) they are bounds only.
 * Well under a second.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#include "tap.h"
#include "testlib.h"

#define STACK_SIZE (64 * 1024)
#define PATTERN 0x5a

static unsigned char stack_mem[STACK_SIZE] __attribute__((aligned(64)));
static ucontext_t main_ctx, call_ctx;
static void (*body)(void);
static int stop, ready;

static void run_body(void)
{
	body();
}

/* The bytes of the stack that body() used, run on stack_mem. */
static size_t depth(void (*fn)(void))
{
	size_t untouched = 0;

	memset(stack_mem, PATTERN, sizeof(stack_mem));
	body = fn;
	if (getcontext(&call_ctx) != 0)
		tap_bail("getcontext");
	call_ctx.uc_stack.ss_sp = stack_mem;
	call_ctx.uc_stack.ss_size = sizeof(stack_mem);
	call_ctx.uc_link = &main_ctx;
	makecontext(&call_ctx, run_body, 0);
	if (swapcontext(&main_ctx, &call_ctx) != 0)
		tap_bail("swapcontext");
	/* Every Debian architecture's stack grows down. */
	while (untouched < sizeof(stack_mem) && stack_mem[untouched] == PATTERN)
		untouched++;
	return sizeof(stack_mem) - untouched;
}

__attribute__((noinline)) static void empty(void)
{
	__asm__ __volatile__("" : : : "memory");
}

static void call_empty(void)
{
	empty();
}

static void call_heavy(void)
{
	if (membarrier_heavy() != 0)
		abort();
}

static void *spin(void *arg)
{
	(void)arg;
	__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

static void *sleeper(void *arg)
{
	struct timespec ts = { 0, 1000000 };

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		nanosleep(&ts, NULL);
	return NULL;
}

/*
 * The page's figures: "A call needs about X\~KiB of stack," and "up to
 * about Y\~KiB more for the dynamic linker".
 */
static int page_figures(double *call, double *lazy)
{
	const char *srcdir = getenv("top_srcdir");
	char path[4096], line[512];
	FILE *f;
	int found = 0, n;

	snprintf(path, sizeof(path), "%s/man/man3/membarrier.3", srcdir ? srcdir : ".");
	f = fopen(path, "r");
	if (f == NULL)
		tap_bail("cannot read %s", path);
	while (fgets(line, sizeof(line), f) != NULL) {
		const char *at = strstr(line, "up to about ");
		double x;

		/* sscanf() stores x before it fails on the text after it. */
		n = 0;
		if (sscanf(line, "A call needs about %lf\\~KiB of stack,%n", &x, &n) == 1 &&
		    n > 0) {
			*call = x;
			found |= 1;
		}
		n = 0;
		if (at != NULL &&
		    sscanf(at, "up to about %lf\\~KiB more for the dynamic linker%n", &x,
			   &n) == 1 && n > 0) {
			*lazy = x;
			found |= 2;
		}
	}
	fclose(f);
	return found == 3;
}

/*
 * used bytes against the page's figure: at most, and (strict) near it.
 * Elsewhere the page's figure times slack (2: another architecture's
 * frames; 4: a sanitizer's), a bound that still catches a frame grown by
 * kilobytes.
 */
static void check(const char *what, size_t used, double page, int strict, double slack)
{
	double kib = used / 1024.0;

	if (strict)
		tap_ok(kib <= page && kib > page - 0.5,
		       "%s: %zu bytes (%.2f KiB), membarrier(3) says about %.1f KiB "
		       "(must be in (page - 0.5, page])", what, used, kib, page);
	else
		tap_ok(kib <= page * slack,
		       "%s: %zu bytes (%.2f KiB), at most %g x membarrier(3)'s %.1f KiB", what,
		       used, kib, slack, page);
}

int main(int argc, char **argv)
{
	double page_call = 0, page_lazy = 0;
	size_t base, setup, call = 0;
	const char *check_env = getenv("STACK_CHECK");
	int now = argc == 2 && strcmp(argv[1], "--bind-now") == 0, strict = 1;
	double slack = 2;
	pthread_t t[2];
	struct membarrier_strategy st;

	if (!now)
		tap_plan(4);
#if !defined(__x86_64__) || defined(__ILP32__) || defined(__OPTIMIZE_SIZE__) || \
	!defined(__OPTIMIZE__)
	strict = 0;
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	strict = 0;
	slack = 4;
#endif
	if (check_env != NULL && strcmp(check_env, "no") == 0)
		strict = 0;
	if (!page_figures(&page_call, &page_lazy))
		tap_bail("membarrier(3) states no stack figures in the form this test reads");
	setenv("LIBMEMBARRIER_HEAVY", "signal", 1);
	base = depth(call_empty);
	if (pthread_create(&t[0], NULL, spin, NULL) != 0 ||
	    pthread_create(&t[1], NULL, sleeper, NULL) != 0)
		tap_bail("pthread_create");
	while (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
		;
	setup = depth(call_heavy) - base;
	if (membarrier_get_strategy(&st, sizeof(st)) != 0 ||
	    strcmp(membarrier_mechanism_name(st.heavy), "signal") != 0)
		tap_bail("the signal mechanism is not available here");
	for (int i = 0; i < 200; i++) {
		size_t d = depth(call_heavy) - base;

		if (d > call)
			call = d;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	tap_diag("the frame that calls: %zu bytes; %s", base,
		 now ? "LD_BIND_NOW=1" : "binding lazily");
	if (!strict)
		tap_diag("not x86_64 at -O2 (or a sanitizer, or STACK_CHECK=no): %g x the page's "
			 "figures as bounds", slack);
	if (now) {
		check("a call that sets the signal mechanism up, LD_BIND_NOW=1", setup,
		      page_call, strict, slack);
		check("a later call (the deepest of 200), LD_BIND_NOW=1", call, page_call, strict,
		      slack);
		return tap_failed != 0;
	}
	/* Binding lazily: the page's sum is a bound. */
	check("a call that sets the signal mechanism up, binding lazily", setup,
	      page_call + page_lazy, 0, strict ? 1 : slack);
	check("a later call (the deepest of 200), binding lazily", call, page_call + page_lazy, 0,
	      strict ? 1 : slack);
	/* The library's own figure: every function bound at start-up. */
	setenv("LD_BIND_NOW", "1", 1);
	fflush(stdout);
	test_reexec(argv[0], "--bind-now", NULL);
	tap_bail("cannot re-execute %s", argv[0]);
}
