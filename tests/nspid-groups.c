/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lmb_proc_is_ours() with many supplementary groups (issue 24, defect 13).
 * The signal mechanism checks that /proc is its own PID namespace's by the
 * NSpid line of /proc/self/status: a process in a child namespace that
 * sees its parent's /proc (a container that kept the host's /proc) has two
 * ids there, and its thread ids in /proc would name other threads.  NSpid
 * follows the Groups line, which grows with the supplementary groups:
 * 0.3.2 read the first 2 KiB only, missed the line, and took "no NSpid"
 * for a kernel before 4.1, "ours".  Here a child with NGROUPS groups
 * (Groups about 20 KB) runs the check as pid 1 of a new PID namespace,
 * /proc left as it was: it must say "not ours".  Controls: the same groups
 * without a new namespace ("ours": the whole file is read, the line
 * found, its one id ours), and the new namespace with no supplementary
 * group ("not ours").  Needs root (setgroups(), unshare(CLONE_NEWPID)).
 * Links the library's internal copy, for lmb_proc_is_ours().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "tap.h"
#include "testlib.h"

int lmb_proc_is_ours(void);

#define NGROUPS 3000

/* Where NSpid starts in /proc/self/status, and how many ids it has. */
static void nspid(long *offset, int *ids)
{
	static char buf[1 << 20];
	long n = 0, r;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	const char *p;

	*offset = -1;
	*ids = 0;
	if (fd < 0)
		return;
	while (n < (long)sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += r;
	close(fd);
	buf[n] = '\0';
	p = strstr(buf, "\nNSpid:");
	if (p == NULL)
		return;
	*offset = p + 1 - buf;
	for (p += 7; *p != '\n' && *p != '\0'; p++)
		if (p[-1] == '\t' && *p >= '0' && *p <= '9')
			(*ids)++;
}

/*
 * In a child: take ngroups supplementary groups, perhaps a new PID
 * namespace (then the check runs in its pid 1), and report the check's
 * answer (exit 10 + answer) after the premise: NSpid where it is, with
 * the expected number of ids.
 */
static int run(int ngroups, int newns, long *offset, int *ids)
{
	int pipefd[2], status;
	pid_t pid;

	if (pipe(pipefd) != 0)
		tap_bail("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		tap_bail("fork: %s", strerror(errno));
	if (pid == 0) {
		static gid_t groups[NGROUPS];
		long premise[2];
		int n_ids;

		for (int i = 0; i < ngroups; i++)
			groups[i] = (gid_t)(100000 + i);
		if (setgroups((size_t)ngroups, groups) != 0)
			_exit(2);
		if (newns) {
			if (unshare(CLONE_NEWPID) != 0)
				_exit(3);
			pid = fork();
			if (pid < 0)
				_exit(4);
			if (pid > 0)
				_exit(waitpid(pid, &status, 0) == pid && WIFEXITED(status) ?
				      WEXITSTATUS(status) : 5);
		}
		nspid(&premise[0], &n_ids);
		premise[1] = n_ids;
		if (write(pipefd[1], premise, sizeof(premise)) != sizeof(premise))
			_exit(6);
		_exit(10 + lmb_proc_is_ours());
	}
	close(pipefd[1]);
	{
		long premise[2] = { -1, 0 };

		if (read(pipefd[0], premise, sizeof(premise)) != sizeof(premise))
			premise[0] = -1;
		*offset = premise[0];
		*ids = (int)premise[1];
	}
	close(pipefd[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status) - 10;
}

int main(void)
{
	long offset;
	int ids, ours, err;
	pid_t pid;

	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root for setgroups() and unshare(CLONE_NEWPID)\n");
		return 77;
	}
	/* Can this system make a PID namespace at all (a container may refuse)? */
	pid = fork();
	if (pid == 0)
		_exit(unshare(CLONE_NEWPID) == 0 ? 0 : errno);
	if (pid < 0 || waitpid(pid, &err, 0) != pid || !WIFEXITED(err) || WEXITSTATUS(err) != 0) {
		printf("1..0 # SKIP unshare(CLONE_NEWPID) refused (%s)\n",
		       pid > 0 && WIFEXITED(err) ? strerror(WEXITSTATUS(err)) : "?");
		return 77;
	}
	tap_plan(3);

	ours = run(NGROUPS, 1, &offset, &ids);
	tap_diag("%d groups, a new PID namespace: NSpid at byte %ld with %d ids", NGROUPS,
		 offset, ids);
	tap_ok(offset > 2048 && ids == 2 && ours == 0,
	       "%d groups, the parent namespace's /proc: not ours (the check said %d)",
	       NGROUPS, ours);

	ours = run(NGROUPS, 0, &offset, &ids);
	tap_diag("%d groups, our own namespace: NSpid at byte %ld with %d ids", NGROUPS,
		 offset, ids);
	tap_ok(offset > 2048 && ids == 1 && ours == 1,
	       "%d groups, our own /proc: ours (the check said %d)", NGROUPS, ours);

	ours = run(0, 1, &offset, &ids);
	tap_diag("no group, a new PID namespace: NSpid at byte %ld with %d ids", offset, ids);
	tap_ok(offset > 0 && offset < 2048 && ids == 2 && ours == 0,
	       "no group, the parent namespace's /proc: not ours (the check said %d)", ours);
	return tap_exit();
}
