/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A child's heavy barriers return, however it was made, while threads of
 * its parent are in shared calls (libmembarrier/coalesce.c): two threads
 * loop membarrier_heavy() (one runs a call, the other waits for it) while
 * the main thread makes children that call it twice and exit, each made
 * with
 *   fork         (the library's fork handlers run),
 *   _Fork        (glibc 2.34: no handlers; the child inherits a call in
 *                 flight whose runner it does not have),
 *   clone        a raw clone system call without CLONE_VM (the same),
 *   vfork        (the child borrows the parent's memory, its calling
 *                 thread suspended),
 *   clone-vm     clone(CLONE_VM) without CLONE_THREAD: a process sharing
 *                the parent's memory, and the parent goes on,
 *   clone-vm-eperm  the same child under a seccomp filter that refuses
 *                membarrier(2): the signal mechanism serves it instead, for
 *                the child alone, so a shared call it ran must not count
 *                for the parent's waiters (with a kernel mechanism some
 *                must have run, and ended without counting, where calls
 *                are shared (private- and shared-expedited): the tests' copy
 *                of the library counts them; up to ten times as many
 *                children are made until one has),
 *   posix_spawn  (the child runs this program again, --spawned).
 * 1000 children each (CHILDREN; under an emulator 10, and 5 spawned,
 * each of which starts the emulator again; under AddressSanitizer 100
 * spawned, each of which maps its shadow memory), each with a 10 s alarm
 * of its own: a child that hangs or dies is a failure, and the first
 * failure of a way ends that way.  In the mechanism chosen here, then with the signal
 * mechanism (--child).  About 30 s on a 2-CPU machine, most of it fork()
 * and exec beside two busy threads (1.5 hung at the first _Fork child).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "tap.h"
#include "testlib.h"
#include "testing.h"

#define SHARERS 2

extern char **environ;
static int stop;
static unsigned long shared_calls;
static const char *self_argv0;
#if defined(__SANITIZE_ADDRESS__)
static const int spawn_divisor = 10;
#else
static const int spawn_divisor = 1;
#endif
static char self_exe[4096];

static void *sharer(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		if (membarrier_heavy() != 0)
			abort();
		__atomic_fetch_add(&shared_calls, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* The child's part: two heavy barriers, within 10 s. */
static int child_body(void)
{
	alarm(10);
	return membarrier_heavy() == 0 && membarrier_heavy() == 0 ? 0 : 3;
}

static int clone_fn(void *arg)
{
	/* clone-vm-eperm: the child's membarrier(2) fails (EPERM); the
	 * library's signal mechanism replaces it, for the child alone. */
	if (arg != NULL && deny_membarrier(SECCOMP_RET_ERRNO | EPERM) != 0)
		return 4;
	return child_body();
}

static char clone_stack[65536] __attribute__((aligned(16)));

/* One child made the way named: its pid, or -1 (errno). */
static pid_t make(const char *way)
{
	pid_t pid = -1;

	if (strcmp(way, "fork") == 0) {
		pid = fork();
		if (pid == 0)
			_exit(child_body());
	} else if (strcmp(way, "_Fork") == 0) {
		pid = _Fork();
		if (pid == 0)
			_exit(child_body());
	} else if (strcmp(way, "clone") == 0) {
#if defined(__s390__)
		pid = (pid_t)syscall(SYS_clone, 0, SIGCHLD, 0, 0, 0);	/* stack first */
#else
		pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
#endif
		if (pid == 0)
			_exit(child_body());
	} else if (strcmp(way, "vfork") == 0) {
		pid = vfork();
		if (pid == 0)
			_exit(child_body());
	} else if (strncmp(way, "clone-vm", 8) == 0) {
		/* The stack grows down on every Debian architecture. */
		char *top = clone_stack + sizeof(clone_stack);

		pid = clone(clone_fn, top, CLONE_VM | SIGCHLD, way[8] ? (void *)way : NULL);
	} else if (strcmp(way, "posix_spawn") == 0) {
		char *argv[] = { (char *)self_argv0, (char *)"--spawned", NULL };
		char *emu_argv[] = { (char *)"sh", (char *)"-c",
				     (char *)"exec $TEST_EMULATOR \"$@\"", (char *)"sh", self_exe,
				     (char *)"--spawned", NULL };
		/* Under an emulator, through it (testlib.h's test_reexec()). */
		int err = test_emulator() == NULL ?
			  posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ) :
			  posix_spawn(&pid, "/bin/sh", NULL, NULL, emu_argv, environ);

		if (err != 0) {
			errno = err;
			pid = -1;
		}
	}
	return pid;
}

static void run(const char *mech, int children)
{
	static const char *const ways[] = { "fork", "_Fork", "clone", "vfork", "clone-vm",
					    "clone-vm-eperm", "posix_spawn" };
	pthread_t t[SHARERS];

	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < SHARERS; i++)
		if (pthread_create(&t[i], NULL, sharer, NULL) != 0)
			tap_bail("pthread_create");
	for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
		unsigned long before = __atomic_load_n(&shared_calls, __ATOMIC_RELAXED);
		unsigned int uncounted0 = lmb_test_uncounted();
		struct timespec t0, t1;
		/* Each spawn starts the program again: under an emulator, the
		 * emulator too; under AddressSanitizer, its 100 ms start-up. */
		int want = strcmp(ways[w], "posix_spawn") != 0 ? children :
			   test_emulator() != NULL ? children / 2 : children / spawn_divisor;
		/* clone-vm-eperm with a kernel mechanism whose calls are shared
		 * (global and fence share none): until a child has run a shared
		 * call over signals, up to a hundred times as many children (a
		 * child runs one only if it arrives between two of the sharers'
		 * calls: about 1 in 10 to 30 on an idle 2-CPU machine; under a
		 * parallel make check, 100 children once saw none, and in Debian
		 * unstable's chroot (gcc 16), 3000 children once saw none). */
		int until_uncounted = strcmp(ways[w], "clone-vm-eperm") == 0 &&
				      (strcmp(mech, "private-expedited") == 0 ||
				       strcmp(mech, "shared-expedited") == 0);
		int limit = until_uncounted ? 100 * want : want;
		int made = 0, status = 0, ok, child_failed = 0;
		pid_t pid = 0;

		if (strcmp(ways[w], "clone-vm-eperm") == 0 && test_emulator() != NULL) {
			printf("ok - %s, %s # SKIP %s\n", mech, ways[w], TEST_NO_SECCOMP);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (; made < limit; made++) {
			if (made >= want && (!until_uncounted || lmb_test_uncounted() != uncounted0))
				break;
			pid = make(ways[w]);
			if (pid < 0 || waitpid(pid, &status, __WALL) != pid ||
			    !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
				child_failed = 1;
				break;
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (made == 0 && pid < 0 && errno == EINVAL && test_emulator() != NULL &&
		    strcmp(ways[w], "clone-vm") == 0) {
			printf("ok - %s, %s # SKIP qemu-user refuses clone(CLONE_VM) without "
			       "CLONE_THREAD (EINVAL)\n", mech, ways[w]);
			continue;
		}
		if (child_failed && pid < 0)
			tap_diag("%s: child %d: %s", ways[w], made + 1, strerror(errno));
		else if (child_failed)
			tap_diag("%s: child %d %s %d%s", ways[w], made + 1,
				 WIFEXITED(status) ? "exited" : "was killed by signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
				 WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ?
				 " (its heavy barriers hung for 10 s)" : "");
		ok = !child_failed && made >= want;
		/* With a kernel mechanism some of those children ran shared calls
		 * over signals: none may have counted for the parent's waiters. */
		if (until_uncounted) {
			unsigned int u = lmb_test_uncounted() - uncounted0;

			tap_diag("%s: %u shared calls that children ran over signals ended "
				 "without counting%s", ways[w], u,
				 u == 0 ? ": none ended so, the case proved nothing" : "");
			ok = ok && u > 0;
		}
		tap_ok(ok, "%s, %s: %d children made while %d threads share calls "
		       "(%lu calls meanwhile, %.1f s), each one's heavy barriers returned", mech,
		       ways[w], made, SHARERS,
		       __atomic_load_n(&shared_calls, __ATOMIC_RELAXED) - before,
		       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < SHARERS; i++)
		pthread_join(t[i], NULL);
}

int main(int argc, char **argv)
{
	int child = argc == 2 && strcmp(argv[1], "--child") == 0;
	const char *n = getenv("CHILDREN");
	int children = n != NULL ? atoi(n) : test_emulator() != NULL ? 10 : 1000;
	struct membarrier_strategy st;

	if (argc == 2 && strcmp(argv[1], "--spawned") == 0)
		return child_body();
	self_argv0 = argv[0];
	if (readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1) <= 0)
		tap_bail("readlink /proc/self/exe");
	if (!child)
		tap_plan(14);
	if (membarrier_get_strategy(&st, sizeof(st)) != 0)
		tap_bail("membarrier_get_strategy");
	run(membarrier_mechanism_name(st.heavy), children);
	if (child)
		return tap_failed != 0;
	test_reexec_signal(argv[0]);
	tap_bail("cannot re-execute %s", argv[0]);
}
