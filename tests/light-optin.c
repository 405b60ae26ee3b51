/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * LIBMEMBARRIER_LIGHT_COMPILER_BARRIER: membarrier_light() is a compiler
 * barrier, and a process where membarrier_heavy() has no process-wide
 * barrier stops at start-up with a message instead of running with a fence
 * on one side only.  The test re-executes itself with
 * LIBMEMBARRIER_HEAVY=fence (which must abort before main) and =signal
 * (which must run).  (tests/header.sh checks that such a translation unit
 * reads no flag; the litmus test, that a compiler barrier on the light
 * side pairs with every heavy mechanism.)
 */
#define _GNU_SOURCE
#define LIBMEMBARRIER_LIGHT_COMPILER_BARRIER 1
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "tap.h"
#include "testlib.h"

/* Run this program with LIBMEMBARRIER_HEAVY=mech and --child; its status,
 * and the start of its standard error in err. */
static int child(const char *mech, char *err, size_t size)
{
	int pipefd[2], status;
	ssize_t n, len = 0;
	pid_t pid;

	if (pipe(pipefd) != 0)
		tap_bail("pipe");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		tap_bail("fork");
	if (pid == 0) {
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		setenv("LIBMEMBARRIER_HEAVY", mech, 1);
		test_reexec("light-optin", "--child", NULL);
		_exit(127);
	}
	close(pipefd[1]);
	while (len < (ssize_t)size - 1 && (n = read(pipefd[0], err + len, size - 1 - (size_t)len)) > 0)
		len += n;
	while (len > 0 && err[len - 1] == '\n')
		len--;
	err[len] = '\0';
	close(pipefd[0]);
	if (waitpid(pid, &status, 0) != pid)
		tap_bail("waitpid");
	return status;
}

int main(int argc, char **argv)
{
	struct membarrier_strategy st;
	char err[1024];
	int status;

	if (argc == 2 && strcmp(argv[1], "--child") == 0) {
		/* Reached only where the start-up check passed. */
		membarrier_get_strategy(&st, sizeof(st));
		membarrier_light();
		return st.heavy == MEMBARRIER_MECHANISM_FENCE || membarrier_heavy() != 0 ? 3 : 0;
	}
	tap_plan(3);
	membarrier_get_strategy(&st, sizeof(st));
	membarrier_light();
	tap_ok(st.heavy != MEMBARRIER_MECHANISM_FENCE && membarrier_heavy() == 0,
	       "the process started: heavy is %s", membarrier_mechanism_name(st.heavy));

	status = child("fence", err, sizeof(err));
	tap_diag("LIBMEMBARRIER_HEAVY=fence: status %#x, stderr: %s", status, err);
	tap_ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT &&
	       strstr(err, "LIBMEMBARRIER_LIGHT_COMPILER_BARRIER") != NULL,
	       "LIBMEMBARRIER_HEAVY=fence: stops at start-up with a message");

	status = child("signal", err, sizeof(err));
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "LIBMEMBARRIER_HEAVY=signal: runs (status %#x)", status);
	return tap_failed != 0;
}
