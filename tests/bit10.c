/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * MEMBARRIER_CMD_SHARED_EXPEDITED (1 << 10) is this project's number, not
 * upstream's: membarrier() passes it to a kernel only where the kernel
 * shows the series' sysctl, and QUERY does not show it elsewhere.  A
 * seccomp filter hands membarrier(2) to a supervisor thread, which
 * answers QUERY as a kernel would that gives bit 10 another meaning,
 * lets every other command through, and counts those with bit 10.
 * Linked with the testing copy of the library, which has no constructor:
 * the probe runs when the test asks, under the filter.
 */
#define _GNU_SOURCE
#include "tap.h"
#include "testlib.h"

#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>

#include "testing.h"

static int listener = -1;
static int bit10_seen;

static void *supervisor(void *arg)
{
	(void)arg;
	/* Started before the filter (so that its own calls are not filtered):
	 * it waits for the listener the filter gives. */
	while (__atomic_load_n(&listener, __ATOMIC_ACQUIRE) < 0)
		sched_yield();
	for (;;) {
		struct seccomp_notif req;
		struct seccomp_notif_resp resp;
		int cmd;

		memset(&req, 0, sizeof(req));
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		memset(&resp, 0, sizeof(resp));
		resp.id = req.id;
		cmd = (int)req.data.args[0];
		if (cmd == MEMBARRIER_CMD_QUERY && req.data.args[1] == 0) {
			/* The supervisor is outside the filter: the real answer. */
			resp.val = raw_membarrier(MEMBARRIER_CMD_QUERY, 0, 0) |
				   MEMBARRIER_CMD_SHARED_EXPEDITED;
		} else {
			if (cmd & MEMBARRIER_CMD_SHARED_EXPEDITED)
				__atomic_add_fetch(&bit10_seen, 1, __ATOMIC_SEQ_CST);
			resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		}
		(void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
}

static int notify_membarrier(void)
{
	struct sock_filter filter[] = {
		TEST_FILTER_MEMBARRIER(SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};

	return test_install_filter(filter, sizeof(filter) / sizeof(filter[0]),
				   SECCOMP_FILTER_FLAG_NEW_LISTENER);
}

static void round_of(const char *how)
{
	int q, ret, err;

	lmb_test_reset();
	__atomic_store_n(&bit10_seen, 0, __ATOMIC_SEQ_CST);
	q = membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
	tap_ok(q >= 0 && !(q & MEMBARRIER_CMD_SHARED_EXPEDITED),
	       "%s: QUERY does not show bit 10 (0x%x)", how, (unsigned int)q);
	errno = 0;
	ret = membarrier(MEMBARRIER_CMD_SHARED_EXPEDITED, 0, 0);
	err = errno;
	tap_ok(ret == -1 && err == EINVAL, "%s: SHARED_EXPEDITED fails with EINVAL (%d, %s)",
	       how, ret, strerror(err));
	tap_ok(__atomic_load_n(&bit10_seen, __ATOMIC_SEQ_CST) == 0,
	       "%s: the kernel was never given bit 10 (%d calls)", how,
	       __atomic_load_n(&bit10_seen, __ATOMIC_SEQ_CST));
}

int main(void)
{
	pthread_t sup;
	int q;

	if (test_emulator() != NULL && !test_seccomp_works()) {
		printf("1..0 # SKIP %s\n", TEST_NO_SECCOMP);
		return 0;
	}
	if (access("/proc/sys/kernel/membarrier_expedited_max_rate", F_OK) == 0) {
		printf("1..0 # SKIP this kernel carries the series: bit 10 is ours here\n");
		return 0;
	}
	tap_plan(7);
	if (pthread_create(&sup, NULL, supervisor, NULL) != 0)
		tap_bail("pthread_create: %s", strerror(errno));
	__atomic_store_n(&listener, notify_membarrier(), __ATOMIC_RELEASE);
	if (listener < 0)
		tap_bail("seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER): %s", strerror(errno));

	/* The control: the sandbox does show bit 10 to a bare system call. */
	q = raw_membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
	tap_ok(q >= 0 && (q & MEMBARRIER_CMD_SHARED_EXPEDITED),
	       "control: the bare QUERY shows bit 10 (0x%x)", (unsigned int)q);

	unsetenv("LIBMEMBARRIER_HEAVY");
	round_of("probed at start-up");
	setenv("LIBMEMBARRIER_HEAVY", "signal", 1);
	round_of("LIBMEMBARRIER_HEAVY=signal");
	return tap_failed ? 1 : 0;
}
